// struct rpma_cq: a provider CQ plus the completion channel it notifies.
#ifndef RPMA_CQ_H_
#define RPMA_CQ_H_

#include <cstdint>
#include <memory>

#include "provider/provider.h"

struct rpma_cq {
  // Null when the channel is shared (then owned by the connection, the
  // request or the SRQ, and it outlives this CQ).
  std::unique_ptr<rpma::prov::CompletionChannel> own_channel;
  rpma::prov::CompletionChannel* channel = nullptr;
  bool shared = false;
  std::unique_ptr<rpma::prov::Cq> cq;  // after own_channel: destroyed first
};

namespace rpma {

// Creates a CQ of `size` entries (clipped to INT_MAX) on its own channel,
// or on `shared_channel` when not null, and arms it. RPMA_E_PROVIDER on a
// provider failure, RPMA_E_NOMEM on allocation failure.
int CqNew(prov::Pd* pd, uint32_t size, prov::CompletionChannel* shared_channel,
          std::unique_ptr<rpma_cq>* out);

}  // namespace rpma

#endif  // RPMA_CQ_H_
