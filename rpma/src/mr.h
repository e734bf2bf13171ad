// struct rpma_mr_local / struct rpma_mr_remote and the 21-byte descriptor.
//
// Descriptor format (little-endian, unaligned; same as librpma 1.3):
//   offset 0  u64  address of the registration (remote ops use absolute
//                  addresses: raddr + offset)
//   offset 8  u64  registered length
//   offset 16 u32  rkey
//   offset 20 u8   RPMA_MR_USAGE_* bits given to rpma_mr_reg()
#ifndef RPMA_MR_H_
#define RPMA_MR_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "peer.h"

struct rpma_mr_local {
  explicit rpma_mr_local(rpma_peer* p) : peer(p) {}
  rpma::PeerRef peer;  // first: released last
  std::unique_ptr<rpma::prov::Mr> mr;
  int usage = 0;
};

struct rpma_mr_remote {
  uint64_t raddr = 0;
  uint64_t size = 0;
  uint32_t rkey = 0;
  int usage = 0;  // verbatim from the descriptor (unknown bits kept)
};

namespace rpma {
inline constexpr size_t kMrDescriptorSize = 21;
inline constexpr int kMrUsageAll = 0xff;  // the 8 RPMA_MR_USAGE_* bits

// The receive work request of rpma_recv / rpma_srq_recv /
// rpma_conn_req_recv: [offset, +len) of dst, or a zero-byte receive when
// dst is null. Callers have checked the arguments.
inline prov::RecvWr MakeRecvWr(const rpma_mr_local* dst, size_t offset,
                               size_t len, const void* op_context) {
  prov::RecvWr wr;
  wr.wr_id = reinterpret_cast<uintptr_t>(op_context);
  if (dst != nullptr) {
    wr.sge.addr = static_cast<char*>(dst->mr->addr()) + offset;
    wr.sge.length = static_cast<uint32_t>(len);
    wr.sge.lkey = dst->mr->lkey();
  }
  return wr;
}
}  // namespace rpma

#endif  // RPMA_MR_H_
