// kv::cluster::FakeClock: a Clock (clock.h) that moves only when a test
// calls Advance(), for deterministic tests of lease deadlines, fencing
// and elections. Pair it with FakeEtcd::AdvanceClock (advance both by the
// same amount) so that the node's clock and etcd's lease clock agree.
//
// Synchronising with the threads under test: WaitForSleepers(n) returns
// once n threads are asleep in SleepUntil with a wake-up time still in
// the future — i.e. they have done everything that was due at Now().
//
// Thread-safety: every method from any thread.
#ifndef KV_CLUSTER_FAKE_CLOCK_H_
#define KV_CLUSTER_FAKE_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "kv/cluster/clock.h"

namespace kv::cluster {

class FakeClock : public Clock {
 public:
  // Starts at an arbitrary, fixed, non-zero time.
  FakeClock();

  TimePoint Now() const override;
  bool SleepUntil(TimePoint t, const std::atomic<bool>& cancel) override;
  void WakeSleepers() override;

  // Moves the time forward by `by` (>= 0) and wakes the sleepers that are
  // due.
  void Advance(std::chrono::nanoseconds by);

  // Waits (real time, at most `timeout`) until at least `n` threads sleep
  // with a wake-up time after Now(). Returns whether that happened.
  bool WaitForSleepers(int n, std::chrono::milliseconds timeout);

  // How many threads sleep with a wake-up time after Now().
  int sleepers() const;

 private:
  int FutureSleepersLocked() const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  TimePoint now_;
  std::multiset<TimePoint> wake_times_;  // of the threads in SleepUntil
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_FAKE_CLOCK_H_
