// CM event channel; see tcp_cm_channel.h.
#include "tcp/tcp_cm_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace rpma::prov::tcp {

int CmQueue::Create(std::shared_ptr<CmQueue>* out) {
  std::shared_ptr<CmQueue> q(new CmQueue());
  q->fd_ = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (q->fd_ < 0) return -errno;
  *out = std::move(q);
  return 0;
}

CmQueue::~CmQueue() {
  if (fd_ >= 0) close(fd_);
}

void CmQueue::TakeCountLocked(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint64_t v;
    (void)!read(fd_, &v, sizeof(v));
  }
}

bool CmQueue::Push(CmEvent* ev) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  events_.push_back(std::move(*ev));
  uint64_t one = 1;
  (void)!write(fd_, &one, sizeof(one));
  return true;
}

int CmQueue::Get(CmEvent* ev) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!events_.empty()) {
        TakeCountLocked(1);
        *ev = std::move(events_.front());
        events_.pop_front();
        return 0;
      }
    }
    int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK)) return -ENODATA;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, -1) < 0 && errno != EINTR) return -errno;
  }
}

void CmQueue::DropFor(CmId* id) {
  std::deque<CmEvent> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<CmEvent> keep;
    for (auto& ev : events_) {
      (ev.id == id ? dropped : keep).push_back(std::move(ev));
    }
    events_.swap(keep);
    TakeCountLocked(dropped.size());
  }
}

void CmQueue::MoveTo(CmId* id, CmQueue* to) {
  if (to == this) return;
  std::scoped_lock lock(mu_, to->mu_);
  std::deque<CmEvent> keep;
  size_t moved = 0;
  for (auto& ev : events_) {
    if (ev.id == id && !to->closed_) {
      to->events_.push_back(std::move(ev));
      uint64_t one = 1;
      (void)!write(to->fd_, &one, sizeof(one));
      ++moved;
    } else {
      keep.push_back(std::move(ev));
    }
  }
  events_.swap(keep);
  TakeCountLocked(moved);
}

std::deque<CmEvent> CmQueue::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  TakeCountLocked(events_.size());
  std::deque<CmEvent> out;
  out.swap(events_);
  return out;
}

int TcpCmChannel::Create(std::unique_ptr<CmChannel>* out) {
  std::shared_ptr<CmQueue> q;
  int rc = CmQueue::Create(&q);
  if (rc != 0) return rc;
  auto ch = std::make_unique<TcpCmChannel>();
  ch->queue_ = std::move(q);
  *out = std::move(ch);
  return 0;
}

TcpCmChannel::~TcpCmChannel() {
  // Pending connect requests own new CmIds; destroying them here (outside
  // the queue lock) rejects those connections.
  std::deque<CmEvent> left = queue_->Close();
  left.clear();
}

}  // namespace rpma::prov::tcp
