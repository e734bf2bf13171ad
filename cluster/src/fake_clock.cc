#include "kv/cluster/fake_clock.h"

namespace kv::cluster {

FakeClock::FakeClock() : now_(TimePoint(std::chrono::hours(1000))) {}

Clock::TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> l(mu_);
  return now_;
}

bool FakeClock::SleepUntil(TimePoint t, const std::atomic<bool>& cancel) {
  std::unique_lock<std::mutex> l(mu_);
  auto it = wake_times_.insert(t);
  cv_.notify_all();  // WaitForSleepers counts this sleeper now
  cv_.wait(l, [&] { return cancel.load() || now_ >= t; });
  wake_times_.erase(it);
  cv_.notify_all();
  return cancel.load();
}

void FakeClock::WakeSleepers() {
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

void FakeClock::Advance(std::chrono::nanoseconds by) {
  std::lock_guard<std::mutex> l(mu_);
  if (by.count() > 0) now_ += by;
  cv_.notify_all();
}

int FakeClock::FutureSleepersLocked() const {
  int n = 0;
  for (auto it = wake_times_.upper_bound(now_); it != wake_times_.end(); ++it) {
    n++;
  }
  return n;
}

bool FakeClock::WaitForSleepers(int n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  return cv_.wait_for(l, timeout, [&] { return FutureSleepersLocked() >= n; });
}

int FakeClock::sleepers() const {
  std::lock_guard<std::mutex> l(mu_);
  return FutureSleepersLocked();
}

}  // namespace kv::cluster
