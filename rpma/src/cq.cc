// rpma_cq_*: completion channel fd, wait (ack + re-arm) and polling.

#include "cq.h"

#include <climits>
#include <new>

#include "export.h"
#include "log_internal.h"

namespace rpma {

int CqNew(prov::Pd* pd, uint32_t size, prov::CompletionChannel* shared_channel,
          std::unique_ptr<rpma_cq>* out) {
  std::unique_ptr<rpma_cq> cq(new (std::nothrow) rpma_cq());
  if (cq == nullptr) return RPMA_E_NOMEM;
  int rc;
  if (shared_channel == nullptr) {
    rc = pd->CreateCompletionChannel(&cq->own_channel);
    if (rc != 0) {
      return RPMA_PROVIDER_FAILED(rc, "creating a completion channel");
    }
    cq->channel = cq->own_channel.get();
  } else {
    cq->channel = shared_channel;
    cq->shared = true;
  }
  int cqe =
      size > static_cast<uint32_t>(INT_MAX) ? INT_MAX : static_cast<int>(size);
  rc = pd->CreateCq(cqe, cq->channel, &cq->cq);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "creating a CQ of %d entries", cqe);
  }
  // Armed from the start so the first completion wakes the fd.
  rc = cq->cq->RequestNotify();
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "arming a CQ");
  }
  *out = std::move(cq);
  return 0;
}

}  // namespace rpma

RPMA_EXPORT int rpma_cq_get_fd(const struct rpma_cq* cq, int* fd) {
  if (cq == nullptr || fd == nullptr) return RPMA_E_INVAL;
  *fd = cq->channel->fd();
  return 0;
}

RPMA_EXPORT int rpma_cq_wait(struct rpma_cq* cq) {
  if (cq == nullptr) return RPMA_E_INVAL;
  if (cq->shared) return RPMA_E_SHARED_CHANNEL;
  rpma::prov::Cq* fired = nullptr;
  // Any failure here, including -EAGAIN on an O_NONBLOCK fd, is "no
  // completion", as librpma reports a failing ibv_get_cq_event.
  if (cq->channel->GetEvent(&fired) != 0) return RPMA_E_NO_COMPLETION;
  cq->cq->AckEvents(1);
  int rc = cq->cq->RequestNotify();
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "re-arming a CQ");
  }
  return 0;
}

RPMA_EXPORT int rpma_cq_get_wc(struct rpma_cq* cq, int num_entries,
                               struct ibv_wc* wc, int* num_entries_got) {
  if (cq == nullptr || num_entries < 1 || wc == nullptr) return RPMA_E_INVAL;
  if (num_entries > 1 && num_entries_got == nullptr) return RPMA_E_INVAL;
  int n = cq->cq->Poll(num_entries, wc);
  if (n == 0) {
    RPMA_LOG_DEBUG("no completion available");
    return RPMA_E_NO_COMPLETION;
  }
  if (n < 0) return RPMA_PROVIDER_FAILED(n, "polling a CQ");
  if (n > num_entries) {
    RPMA_LOG_ERROR("polling a CQ returned %d entries, %d asked", n,
                   num_entries);
    return RPMA_E_UNKNOWN;
  }
  if (num_entries_got != nullptr) *num_entries_got = n;
  return 0;
}
