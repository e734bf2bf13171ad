// The verbs provider's completion channel (ibv_comp_channel) and completion
// queue (ibv_cq).
//
// Ownership: each wrapper owns its verbs object. A CQ's cq_context is its
// VerbsCq, so GetEvent() can return the wrapper. ibv_destroy_cq() waits for
// every event got through GetEvent() to be acknowledged (AckEvents), as
// libibverbs requires; the semantic layer acknowledges before destroying.
// CQs are destroyed before their channel (provider.h).
//
// Thread-safety: Poll/RequestNotify/GetEvent may run concurrently with
// anything on other objects (libibverbs' own locking).
#ifndef RPMA_VERBS_VERBS_CQ_H_
#define RPMA_VERBS_VERBS_CQ_H_

#include <infiniband/verbs.h>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsCompletionChannel final : public CompletionChannel {
 public:
  explicit VerbsCompletionChannel(struct ibv_comp_channel* ch) : ch_(ch) {}
  ~VerbsCompletionChannel() override;

  struct ibv_comp_channel* channel() const {
    return ch_;
  }
  int fd() const override { return ch_->fd; }
  // ibv_get_cq_event(); -EAGAIN on an O_NONBLOCK fd with nothing pending.
  int GetEvent(Cq** cq) override;

 private:
  struct ibv_comp_channel* const ch_;
};

class VerbsCq final : public Cq {
 public:
  // channel may be null (a polled-only CQ); it must outlive the CQ.
  explicit VerbsCq(VerbsCompletionChannel* channel) : channel_(channel) {}
  ~VerbsCq() override;

  // ibv_create_cq(ctx, cqe, this, channel); once, before any other call.
  int Init(struct ibv_context* ctx, int cqe);
  struct ibv_cq* cq() const {
    return cq_;
  }

  // ibv_poll_cq(); completions as the NIC reports them, with NormalizeWc().
  // -EIO if the provider reports a polling failure.
  int Poll(int n, struct ibv_wc* wc) override;
  int RequestNotify() override;
  void AckEvents(unsigned n) override;
  CompletionChannel* channel() const override { return channel_; }

 private:
  VerbsCompletionChannel* const channel_;
  struct ibv_cq* cq_ = nullptr;
};

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_CQ_H_
