// struct rpma_peer_cfg: what the remote side declares about itself.
#ifndef RPMA_PEER_CFG_H_
#define RPMA_PEER_CFG_H_

#include <cstddef>

struct rpma_peer_cfg {
  bool direct_write_to_pmem = false;
};

namespace rpma {
// The peer_cfg descriptor: one byte, 0 or 1 (any non-zero decodes as 1).
inline constexpr size_t kPeerCfgDescriptorSize = 1;
}  // namespace rpma

#endif  // RPMA_PEER_CFG_H_
