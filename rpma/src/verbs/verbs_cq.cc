#include "verbs/verbs_cq.h"

#include <cerrno>

#include "log_internal.h"
#include "verbs/verbs_mapping.h"

namespace rpma::prov::verbs {

VerbsCompletionChannel::~VerbsCompletionChannel() {
  int rc = ibv_destroy_comp_channel(ch_);
  if (rc != 0) RPMA_LOG_WARNING("ibv_destroy_comp_channel failed: %d", rc);
}

int VerbsCompletionChannel::GetEvent(Cq** cq) {
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  errno = 0;
  if (ibv_get_cq_event(ch_, &ev_cq, &ev_ctx) != 0) {
    const int e = errno;
    return (e == EAGAIN || e == EWOULDBLOCK) ? -EAGAIN : NegErrno(-1, e);
  }
  *cq = static_cast<VerbsCq*>(ev_ctx);
  return 0;
}

VerbsCq::~VerbsCq() {
  if (cq_ == nullptr) return;
  int rc = ibv_destroy_cq(cq_);
  if (rc != 0) RPMA_LOG_WARNING("ibv_destroy_cq failed: %d", rc);
}

int VerbsCq::Init(ibv_context* ctx, int cqe) {
  if (cq_ != nullptr || cqe <= 0) return -EINVAL;
  errno = 0;
  cq_ = ibv_create_cq(ctx, cqe, this,
                      channel_ != nullptr ? channel_->channel() : nullptr, 0);
  if (cq_ == nullptr) return NegErrno(0, errno);
  return 0;
}

int VerbsCq::Poll(int n, ibv_wc* wc) {
  if (n <= 0 || wc == nullptr) return -EINVAL;
  const int got = ibv_poll_cq(cq_, n, wc);
  if (got < 0) return -EIO;  // no errno contract for ibv_poll_cq()
  for (int i = 0; i < got; ++i) NormalizeWc(&wc[i]);
  return got;
}

int VerbsCq::RequestNotify() {
  // solicited_only = 0: any completion fires the channel.
  const int rc = ibv_req_notify_cq(cq_, 0);
  return rc == 0 ? 0 : NegErrno(rc, errno);
}

void VerbsCq::AckEvents(unsigned n) {
  if (n > 0) ibv_ack_cq_events(cq_, n);
}

}  // namespace rpma::prov::verbs
