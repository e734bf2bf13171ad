// Sockets progressed by a completion channel's waiters; see
// progress_group.h.
#include "tcp/progress_group.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "tcp/progress_engine.h"
#include "tcp/tcp_conn.h"

namespace rpma::prov::tcp {

// The engine's handler of the lend set; the group may be gone first.
class ProgressGroup::LendHandler : public Handler {
 public:
  explicit LendHandler(std::weak_ptr<ProgressGroup> g) : g_(std::move(g)) {}
  void OnEvent(uint32_t) override {
    if (auto g = g_.lock()) g->ServeLent();
  }

 private:
  const std::weak_ptr<ProgressGroup> g_;
};

int ProgressGroup::Create(int event_fd, std::shared_ptr<ProgressGroup>* out) {
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return -errno;
  int lend_epfd = epoll_create1(EPOLL_CLOEXEC);
  if (lend_epfd < 0) {
    const int rc = -errno;
    close(epfd);
    return rc;
  }
  std::shared_ptr<ProgressGroup> g(new ProgressGroup(epfd, lend_epfd));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, event_fd, &ev) != 0) return -errno;
  *out = std::move(g);
  return 0;
}

ProgressGroup::~ProgressGroup() {
  StopLending();
  close(lend_epfd_);
  close(epfd_);
}

int ProgressGroup::Join(const std::shared_ptr<TcpConn>& conn, int sock,
                        uint32_t events, uint64_t* key) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t k = next_key_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = k;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, sock, &ev) != 0) return -errno;
  if (epoll_ctl(lend_epfd_, EPOLL_CTL_ADD, sock, &ev) != 0) {
    const int rc = -errno;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
    return rc;
  }
  members_[k] = conn;
  *key = k;
  return 0;
}

void ProgressGroup::Modify(int sock, uint64_t key, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, sock, &ev);
  epoll_ctl(lend_epfd_, EPOLL_CTL_MOD, sock, &ev);
}

void ProgressGroup::Leave(int sock, uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
  epoll_ctl(lend_epfd_, EPOLL_CTL_DEL, sock, nullptr);
  members_.erase(key);
}

std::shared_ptr<TcpConn> ProgressGroup::Member(uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(key);
  return it != members_.end() ? it->second.lock() : nullptr;
}

void ProgressGroup::Progress() {
  constexpr int kMaxEvents = 16;
  epoll_event evs[kMaxEvents];
  int n = epoll_wait(epfd_, evs, kMaxEvents, 0);
  for (int i = 0; i < n; ++i) {
    // epoll_event is packed: copy the fields out.
    const uint64_t key = evs[i].data.u64;
    const uint32_t events = evs[i].events;
    if (key == 0) continue;  // a completion: the caller takes it
    if (std::shared_ptr<TcpConn> c = Member(key)) {
      app_serves_.fetch_add(1, std::memory_order_relaxed);
      c->OnAppEvent(events);
    }
  }
}

void ProgressGroup::Lend(ProgressEngine* engine) {
  if (engine == nullptr) return;
  std::lock_guard<std::mutex> lock(lend_mu_);
  if (engine_ != nullptr && engine_ != engine) return;  // one engine only
  lent_.store(true, std::memory_order_release);
  if (engine_ == nullptr) {
    uint64_t id = 0;
    auto h = std::make_shared<LendHandler>(weak_from_this());
    if (engine->Add(lend_epfd_, EPOLLIN | EPOLLONESHOT, std::move(h), &id) !=
        0) {
      lent_.store(false, std::memory_order_release);
      return;  // not lent: the handover serves them, as before
    }
    engine_ = engine;
    lend_id_ = id;
    return;
  }
  engine_->Modify(lend_epfd_, lend_id_, EPOLLIN | EPOLLONESHOT);
}

void ProgressGroup::Reclaim() {
  std::lock_guard<std::mutex> lock(lend_mu_);
  if (!lent_.exchange(false, std::memory_order_acq_rel)) return;
  // Disarmed; a ServeLent running now re-arms only while lent_.
  engine_->Modify(lend_epfd_, lend_id_, 0);
}

void ProgressGroup::StopLending() {
  std::lock_guard<std::mutex> lock(lend_mu_);
  lent_.store(false, std::memory_order_release);
  if (engine_ == nullptr) return;
  engine_->Remove(lend_epfd_, lend_id_);
  engine_ = nullptr;
  lend_id_ = 0;
}

void ProgressGroup::ServeLent() {
  constexpr int kMaxEvents = 16;
  epoll_event evs[kMaxEvents];
  const int n = epoll_wait(lend_epfd_, evs, kMaxEvents, 0);
  // Counted first: a peer may see the responses before this returns.
  if (n > 0) lent_serves_.fetch_add(n, std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    const uint64_t key = evs[i].data.u64;
    const uint32_t events = evs[i].events;
    // As the engine serves a socket of its own (no deferred acks).
    if (std::shared_ptr<TcpConn> c = Member(key)) c->OnEvent(events);
  }
  std::lock_guard<std::mutex> lock(lend_mu_);
  if (lent_.load(std::memory_order_acquire) && engine_ != nullptr) {
    engine_->Modify(lend_epfd_, lend_id_, EPOLLIN | EPOLLONESHOT);
  }
}

}  // namespace rpma::prov::tcp
