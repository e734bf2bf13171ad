// Completion queue and channel; see tcp_cq.h.
#include "tcp/tcp_cq.h"

#include <cerrno>
#include <iterator>

#include "log_internal.h"
#include "tcp/tcp_device.h"

namespace rpma::prov::tcp {

int TcpCompletionChannel::Create(std::unique_ptr<CompletionChannel>* out) {
  std::unique_ptr<TcpCompletionChannel> ch(new TcpCompletionChannel());
  int rc = EventQueue<TcpCq*>::Create(&ch->events_);
  if (rc != 0) return rc;
  rc = ProgressGroup::Create(ch->events_->fd(), &ch->group_);
  if (rc != 0) return rc;
  *out = std::move(ch);
  return 0;
}

namespace {
// The channel this thread is about to take events of (Consuming).
thread_local TcpCompletionChannel* consuming = nullptr;
}  // namespace

TcpCompletionChannel::Consuming::Consuming(TcpCompletionChannel* ch)
    : outer_(consuming) {
  consuming = ch;
}

TcpCompletionChannel::Consuming::~Consuming() { consuming = outer_; }

int TcpCompletionChannel::TakeAfterProgress(Cq** cq) {
  // The waiter reads its connections' sockets itself: the bytes that
  // woke it complete here, with no hand-off to the engine thread, and the
  // events it fires for itself never touch the eventfd.
  {
    Consuming self(this);
    group_->Progress();
  }
  TcpCq* fired = nullptr;
  int rc = events_->TryGet(&fired);
  events_->Count();  // what it fired and leaves: other waiters see them
  if (rc == 0) *cq = fired;
  return rc;
}

int TcpCompletionChannel::GetEvent(Cq** cq) {
  for (;;) {
    int rc = TakeAfterProgress(cq);
    if (rc != -EAGAIN) return rc;
    if (event_fd::NonBlocking(group_->fd())) return -EAGAIN;
    rc = event_fd::WaitReadable(group_->fd());
    if (rc != 0) return rc;
  }
}

int TcpCompletionChannel::TryGetEvent(Cq** cq) { return TakeAfterProgress(cq); }

void TcpCompletionChannel::Notify(TcpCq* cq) {
  if (consuming == this) {
    (void)events_->PushUncounted(&cq);
  } else {
    (void)events_->Push(&cq);
  }
}

void TcpCompletionChannel::Drop(TcpCq* cq) {
  (void)events_->RemoveIf([cq](TcpCq* ev) { return ev == cq; });
}

TcpCq::TcpCq(int cqe, TcpCompletionChannel* channel)
    : cqe_(cqe > 0 ? static_cast<size_t>(cqe) : 1),
      channel_(channel),
      strict_(StrictMode()) {}

TcpCq::~TcpCq() {
  if (channel_ != nullptr) channel_->Drop(this);
}

int TcpCq::Poll(int n, struct ibv_wc* wc) {
  if (n <= 0 || wc == nullptr) return -EINVAL;  // provider.h, as verbs
  bool empty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (overrun_) return -EOVERFLOW;
    empty = wcs_.empty();
  }
  // Nothing queued: read the sockets first (a poll-mode application then
  // makes its own progress, as with a NIC's CQ in memory).
  if (empty && channel_ != nullptr) channel_->group()->Progress();
  std::lock_guard<std::mutex> lock(mu_);
  if (overrun_) return -EOVERFLOW;
  int got = 0;
  while (got < n && !wcs_.empty()) {
    wc[got++] = wcs_.front();
    wcs_.pop_front();
  }
  return got;
}

int TcpCq::RequestNotify() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_ = true;
  return 0;
}

void TcpCq::Push(const struct ibv_wc& wc) {
  bool fire = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A real CQ overruns into an async error; we keep the completion (the
    // queue sizes bound what can be outstanding) and log the misuse once.
    if (wcs_.size() >= cqe_ && !overflow_logged_) {
      overflow_logged_ = true;
      RPMA_LOG_WARNING("tcp: completion queue overrun (size %zu)%s", cqe_,
                       strict_ ? ": the CQ is in error (strict mode)" : "");
      overrun_ = strict_;
    }
    wcs_.push_back(wc);
    if (armed_ && channel_ != nullptr) {
      armed_ = false;
      fire = true;
    }
  }
  if (fire && !NotifyBatch::Defer(this)) channel_->Notify(this);
}

namespace {
thread_local NotifyBatch* current_batch = nullptr;
}  // namespace

NotifyBatch::NotifyBatch() : outer_(current_batch) { current_batch = this; }

NotifyBatch::~NotifyBatch() {
  current_batch = outer_;
  for (size_t i = 0; i < n_; i++) cqs_[i]->FireChannel();
  for (TcpCq* cq : overflow_) cq->FireChannel();
}

bool NotifyBatch::Defer(TcpCq* cq) {
  if (current_batch == nullptr) return false;
  NotifyBatch* b = current_batch;
  if (b->n_ < std::size(b->cqs_)) {
    b->cqs_[b->n_++] = cq;
  } else {
    b->overflow_.push_back(cq);
  }
  return true;
}

}  // namespace rpma::prov::tcp
