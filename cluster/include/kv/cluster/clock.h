// kv::cluster::Clock: the steady time the cluster's deadlines are measured
// in (lease_keeper.h), injectable so tests drive it by hand (fake_clock.h)
// and the deadline logic is tested deterministically.
//
// A Clock also puts threads to sleep until a time point, because with a
// fake clock "sleep 2 s" must mean "until the test has advanced the clock
// by 2 s", not two real seconds.
//
// Thread-safety: every method from any thread.
#ifndef KV_CLUSTER_CLOCK_H_
#define KV_CLUSTER_CLOCK_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kv::cluster {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = TimePoint::duration;

  virtual ~Clock() = default;

  // The current steady time (never goes back).
  virtual TimePoint Now() const = 0;

  // Blocks until Now() >= `t` or `cancel` is true (checked on entry and
  // after every WakeSleepers()). Returns `cancel`'s value at the end.
  // Whoever sets `cancel` calls WakeSleepers() afterwards.
  virtual bool SleepUntil(TimePoint t, const std::atomic<bool>& cancel) = 0;

  // Wakes every thread in SleepUntil so that it re-checks its `cancel`.
  virtual void WakeSleepers() = 0;
};

// The real clock: std::chrono::steady_clock. Sleepers of one SteadyClock
// share one condition variable, so give each owner (a LeaseKeeper) its
// own instance or accept spurious wake-ups (harmless: they sleep again).
class SteadyClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }

  bool SleepUntil(TimePoint t, const std::atomic<bool>& cancel) override {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_until(l, t, [&] { return cancel.load(); });
    return cancel.load();
  }

  void WakeSleepers() override {
    // Taking the mutex orders the caller's store to `cancel` before the
    // sleeper's check-then-wait, so the wake-up cannot be lost.
    std::lock_guard<std::mutex> l(mu_);
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CLOCK_H_
