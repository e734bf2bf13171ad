// Sockets progressed by a completion channel's waiters; see
// progress_group.h.
#include "tcp/progress_group.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "tcp/tcp_conn.h"

namespace rpma::prov::tcp {

int ProgressGroup::Create(int event_fd, std::shared_ptr<ProgressGroup>* out) {
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return -errno;
  std::shared_ptr<ProgressGroup> g(new ProgressGroup(epfd));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, event_fd, &ev) != 0) return -errno;
  *out = std::move(g);
  return 0;
}

ProgressGroup::~ProgressGroup() { close(epfd_); }

int ProgressGroup::Join(const std::shared_ptr<TcpConn>& conn, int sock,
                        uint32_t events, uint64_t* key) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t k = next_key_++;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = k;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, sock, &ev) != 0) return -errno;
  members_[k] = conn;
  *key = k;
  return 0;
}

void ProgressGroup::Modify(int sock, uint64_t key, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, sock, &ev);
}

void ProgressGroup::Leave(int sock, uint64_t key) {
  std::lock_guard<std::mutex> lock(mu_);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, sock, nullptr);
  members_.erase(key);
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
    std::shared_ptr<TcpConn> c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = members_.find(key);
      if (it != members_.end()) c = it->second.lock();
    }
    if (c) c->OnAppEvent(events);
  }
}

}  // namespace rpma::prov::tcp
