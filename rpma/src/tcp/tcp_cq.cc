// Completion queue and channel; see tcp_cq.h.
#include "tcp/tcp_cq.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "log_internal.h"
#include "tcp/tcp_device.h"

namespace rpma::prov::tcp {

int TcpCompletionChannel::Create(std::unique_ptr<CompletionChannel>* out) {
  std::unique_ptr<TcpCompletionChannel> ch(new TcpCompletionChannel());
  ch->fd_ = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (ch->fd_ < 0) return -errno;
  *out = std::move(ch);
  return 0;
}

TcpCompletionChannel::~TcpCompletionChannel() {
  if (fd_ >= 0) close(fd_);
}

// Invariant: the eventfd counter == events_.size(), both changed under
// mu_; so the read in GetEvent never blocks while an event is queued.
int TcpCompletionChannel::GetEvent(Cq** cq) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!events_.empty()) {
        uint64_t v;
        if (read(fd_, &v, sizeof(v)) != sizeof(v)) return -EIO;
        *cq = events_.front();
        events_.pop_front();
        return 0;
      }
    }
    int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK)) return -EAGAIN;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return -errno;
  }
}

void TcpCompletionChannel::Notify(TcpCq* cq) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(cq);
  uint64_t one = 1;
  (void)!write(fd_, &one, sizeof(one));
}

void TcpCompletionChannel::Drop(TcpCq* cq) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t before = events_.size();
  events_.erase(std::remove(events_.begin(), events_.end(), cq), events_.end());
  for (size_t i = events_.size(); i < before; ++i) {
    uint64_t v;
    (void)!read(fd_, &v, sizeof(v));
  }
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
  for (TcpCq* cq : cqs_) cq->FireChannel();
}

bool NotifyBatch::Defer(TcpCq* cq) {
  if (current_batch == nullptr) return false;
  current_batch->cqs_.push_back(cq);
  return true;
}

}  // namespace rpma::prov::tcp
