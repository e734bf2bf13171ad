// Progress engine; see progress_engine.h.
#include "tcp/progress_engine.h"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "log_internal.h"
#include "tcp/socket_util.h"

namespace rpma::prov::tcp {
namespace {
constexpr uint64_t kWakeId = 0;
constexpr uint64_t kTimerId = ~uint64_t{0};

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// RPMA_TCP_POLL_US: a decimal count of microseconds; anything else keeps
// the default.
int64_t PollWindowNs() {
  const char* v = std::getenv("RPMA_TCP_POLL_US");
  if (v == nullptr || *v == '\0') return ProgressEngine::kDefaultPollUs * 1000;
  char* end = nullptr;
  long long us = std::strtoll(v, &end, 10);
  if (*end != '\0' || us < 0 || us > 10'000'000) {
    RPMA_LOG_WARNING("tcp: ignoring RPMA_TCP_POLL_US=%s (not 0..10000000)", v);
    return ProgressEngine::kDefaultPollUs * 1000;
  }
  return us * 1000;
}
}  // namespace

int ProgressEngine::Create(std::unique_ptr<ProgressEngine>* out) {
  std::unique_ptr<ProgressEngine> e(new ProgressEngine());
  e->poll_ns_ = PollWindowNs();
  e->epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (e->epfd_ < 0) return -errno;
  e->wakefd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e->wakefd_ < 0) return -errno;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  if (epoll_ctl(e->epfd_, EPOLL_CTL_ADD, e->wakefd_, &ev) != 0) return -errno;
  e->shadowfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (e->shadowfd_ < 0) return -errno;
  e->timerfd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (e->timerfd_ < 0) return -errno;
  ev.data.u64 = kTimerId;
  if (epoll_ctl(e->epfd_, EPOLL_CTL_ADD, e->timerfd_, &ev) != 0) return -errno;
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  *out = std::move(e);
  return 0;
}

ProgressEngine::~ProgressEngine() {
  if (thread_.joinable()) {
    stop_ = true;
    uint64_t one = 1;
    (void)!write(wakefd_, &one, sizeof(one));
    thread_.join();
  }
  std::unordered_map<uint64_t, std::shared_ptr<Handler>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(handlers_);
  }
  left.clear();  // handlers close their own fds
  if (wakefd_ >= 0) close(wakefd_);
  if (timerfd_ >= 0) close(timerfd_);
  if (shadowfd_ >= 0) close(shadowfd_);
  if (epfd_ >= 0) close(epfd_);
}

int ProgressEngine::Add(int fd, uint32_t events, std::shared_ptr<Handler> h,
                        uint64_t* id, bool ticks) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t my = next_id_++;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = my;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) return -errno;
    handlers_[my] = std::move(h);
    if (ticks) {
      wake = ticking_++ == 0;
    } else {
      tickless_.insert(my);
    }
    *id = my;
  }
  // The thread may sleep with no timeout: its ticks start now (a
  // connection's deadlines need them even if its socket stays silent).
  if (wake) Wake();
  return 0;
}

void ProgressEngine::HoldTicks(int delta) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = ticking_ == 0 && delta > 0;
    ticking_ += delta;
  }
  if (wake) Wake();
}

void ProgressEngine::Wake() {
  uint64_t one = 1;
  (void)!write(wakefd_, &one, sizeof(one));
}

void ProgressEngine::Modify(int fd, uint64_t id, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  if (epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(shadowfd_, EPOLL_CTL_MOD, fd, &ev);  // delegated
  }
}

void ProgressEngine::Remove(int fd, uint64_t id) {
  std::shared_ptr<Handler> dropped;  // released outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
  if (delegated_.erase(id) > 0)
    epoll_ctl(shadowfd_, EPOLL_CTL_DEL, fd, nullptr);
  was_ready_.erase(id);
  auto it = handlers_.find(id);
  if (it == handlers_.end()) return;
  dropped = std::move(it->second);
  handlers_.erase(it);
  if (tickless_.erase(id) == 0) ticking_--;
}

void ProgressEngine::Unwatch(int fd, uint64_t id, uint32_t events) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (handlers_.count(id) == 0 || delegated_.count(id) > 0) return;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    if (epoll_ctl(shadowfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      // Cannot check it: keep watching it ourselves.
      epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
      return;
    }
    first = delegated_.empty();
    delegated_.insert(id);
  }
  // The thread may be blocked for a whole tick: let it start checking.
  if (first) Wake();
}

void ProgressEngine::Rewatch(int fd, uint64_t id, uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  if (handlers_.count(id) == 0 || delegated_.erase(id) == 0) return;
  was_ready_.erase(id);
  epoll_ctl(shadowfd_, EPOLL_CTL_DEL, fd, nullptr);
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void ProgressEngine::DeferFlush(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Deferred& d : deferred_) {
    if (d.id == id) return;
  }
  deferred_.push_back({id, NowNs() + kDeferUs * 1000});
  // An armed timer fires no later than this deadline: it was set for an
  // earlier deferral's (RunDeferred re-arms for what is left).
  if (timer_armed_) return;
  ArmTimer(kDeferUs * 1000);
}

void ProgressEngine::CancelDeferred(uint64_t id) {
  // The timer stays armed: disarming costs a syscall per cancel (one per
  // request/reply on a busy connection), a spurious expiry one wake-up per
  // kDeferUs at most.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = deferred_.begin(); it != deferred_.end(); ++it) {
    if (it->id == id) {
      deferred_.erase(it);
      return;
    }
  }
}

void ProgressEngine::ArmTimer(int64_t in_ns) {
  itimerspec t{};
  in_ns = std::max<int64_t>(in_ns, 1);  // 0 would disarm
  t.it_value.tv_sec = in_ns / 1000000000;
  t.it_value.tv_nsec = in_ns % 1000000000;
  timerfd_settime(timerfd_, 0, &t, nullptr);
  timer_armed_ = true;
}

void ProgressEngine::Collect(const std::vector<uint64_t>& ids,
                             std::vector<std::shared_ptr<Handler>>* out) {
  for (uint64_t id : ids) {
    auto it = handlers_.find(id);
    if (it != handlers_.end()) out->push_back(it->second);
  }
}

void ProgressEngine::RunChecks() {
  constexpr int kMaxEvents = 256;
  epoll_event evs[kMaxEvents];
  // Only the ready ones come back: a check costs one syscall however many
  // connections are delegated (idle ones cost nothing).
  int n = epoll_wait(shadowfd_, evs, kMaxEvents, 0);
  std::vector<std::pair<std::shared_ptr<Handler>, bool>> hs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::unordered_set<uint64_t> ready;
    for (int i = 0; i < n; ++i) {
      const uint64_t id = evs[i].data.u64;
      auto it = handlers_.find(id);
      if (it == handlers_.end() || delegated_.count(id) == 0) continue;
      ready.insert(id);
      hs.emplace_back(it->second, was_ready_.count(id) == 0);
    }
    was_ready_.swap(ready);
  }
  for (auto& [h, first] : hs) h->OnCheck(first);
}

void ProgressEngine::RunDeferred() {
  uint64_t v;
  (void)!read(timerfd_, &v, sizeof(v));
  std::vector<uint64_t> due;
  std::vector<std::shared_ptr<Handler>> hs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Due within kDeferSlackUs counts as due: no second wake-up for it.
    const int64_t now = NowNs();
    const int64_t horizon = now + kDeferSlackUs * 1000;
    int64_t next = INT64_MAX;
    size_t kept = 0;
    for (const Deferred& d : deferred_) {
      if (d.deadline_ns <= horizon) {
        due.push_back(d.id);
      } else {
        next = std::min(next, d.deadline_ns);
        deferred_[kept++] = d;
      }
    }
    deferred_.resize(kept);
    timer_armed_ = false;
    if (kept > 0) ArmTimer(next - now);
    Collect(due, &hs);
  }
  for (auto& h : hs) h->OnDeferred();
}

void ProgressEngine::KickAll() {
  kick_ = true;
  Wake();
}

void ProgressEngine::Run() {
  constexpr int kMaxEvents = 64;
  epoll_event evs[kMaxEvents];
  int64_t next_tick = 0;   // while handlers need ticks
  int64_t next_check = 0;  // while connections are delegated
  std::vector<std::shared_ptr<Handler>> all;
  int64_t spin_until_ns = 0;  // poll without blocking until then
  while (!stop_) {
    int64_t now = NowMs();
    bool spin = poll_ns_ > 0 && NowNs() < spin_until_ns;
    bool checking;
    bool ticking;
    {
      std::lock_guard<std::mutex> lock(mu_);
      checking = !delegated_.empty();
      ticking = ticking_ > 0;
    }
    if (!checking) {
      next_check = 0;
    } else if (next_check == 0) {
      next_check = now + kHandoverMs;
    }
    if (!ticking) {
      next_tick = 0;
    } else if (next_tick == 0) {
      next_tick = now + kTickMs;
    }
    int64_t until = INT64_MAX;  // no timeout: only listeners, nothing due
    if (ticking) until = next_tick;
    if (checking) until = std::min(until, next_check);
    int wait = until == INT64_MAX ? -1
               : until > now      ? static_cast<int>(until - now)
                                  : 0;
    int n = epoll_wait(epfd_, evs, kMaxEvents, spin ? 0 : wait);
    if (n < 0 && errno != EINTR) {
      RPMA_LOG_ERROR("tcp engine: epoll_wait: %d", errno);
      return;
    }
    bool traffic = false;
    for (int i = 0; i < n; ++i) {
      // epoll_event is packed: copy fields before binding references.
      const uint64_t id = evs[i].data.u64;
      const uint32_t events = evs[i].events;
      if (id == kWakeId) {
        uint64_t v;
        (void)!read(wakefd_, &v, sizeof(v));
        continue;
      }
      if (id == kTimerId) {
        RunDeferred();
        continue;
      }
      traffic = true;
      std::shared_ptr<Handler> h;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = handlers_.find(id);
        if (it != handlers_.end()) h = it->second;
      }
      if (h) h->OnEvent(events);
    }
    if (traffic && poll_ns_ > 0) {
      spin_until_ns = NowNs() + poll_ns_;
    } else if (spin && n <= 0) {
      // On a small machine the application and the peer's engine need the
      // core more than an empty poll does.
      sched_yield();
    }
    now = NowMs();
    if (checking && now >= next_check) {
      next_check = now + kHandoverMs;
      RunChecks();
    }
    bool tick = next_tick != 0 && now >= next_tick;
    bool kick = kick_.exchange(false);
    if (!tick && !kick) continue;
    if (tick) next_tick = now + kTickMs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.clear();
      for (auto& [id, h] : handlers_) all.push_back(h);
    }
    for (auto& h : all) {
      if (kick) h->OnKick();
      if (tick) h->OnTick(now);
    }
    all.clear();
  }
}

}  // namespace rpma::prov::tcp
