// kv::cluster::LeaseKeeper: one etcd lease kept alive, and the fencing
// deadline that goes with it (docs/cluster.md, "Membership and fencing").
// Membership (a node's registration) and Election (the controller's key)
// both hang on one; this is the only place the deadline rule is written.
//
// The rule: deadline = the time the last successful keepalive (or the
// grant) was SENT + the granted TTL − margin. etcd restarts the TTL when
// the request reaches it, which is after it was sent, so etcd cannot
// expire the lease before send time + TTL; the margin covers clock drift
// between this host and etcd's leader (and a GC-like stall of the caller
// between reading the clock and acting). The time the answer arrived never
// moves the deadline: a slow answer must not buy time.
//
// Two threads: the renewer sends a keepalive every TTL/3 (retrying sooner
// after a failure); the fencer sleeps until the deadline. When the deadline
// passes without a renewal — or etcd says the lease is gone — the keeper is
// fenced: `on_fence` runs exactly once, from one of these threads, renewal
// stops, and Alive() is false for good. A fenced keeper is never revived:
// the owner grants a new lease (a new LeaseKeeper).
//
// Thread-safety: every method from any thread. `etcd` and `clock` must
// outlive the keeper. `on_fence` must not destroy the keeper or call Stop()
// or Revoke() (they join the thread that runs it).
#ifndef KV_CLUSTER_LEASE_KEEPER_H_
#define KV_CLUSTER_LEASE_KEEPER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "kv/cluster/clock.h"
#include "kv/cluster/etcd.h"
#include "kv/status.h"

namespace kv::cluster {

class LeaseKeeper {
 public:
  struct Options {
    std::chrono::seconds ttl{5};  // asked for; etcd may grant more
    // Subtracted from send time + TTL. 0: the default, max(500 ms, TTL/10)
    // of the granted TTL.
    std::chrono::milliseconds margin{0};
    // Delay before retrying a keepalive that failed (unavailable, timed
    // out). 0: min(250 ms, TTL/3).
    std::chrono::milliseconds retry{0};
  };

  // The default margin for a granted TTL: max(500 ms, TTL/10).
  static std::chrono::milliseconds DefaultMargin(std::chrono::seconds ttl);

  // The deadline rule (pure): `sent` + `ttl` − `margin`.
  static Clock::TimePoint Deadline(Clock::TimePoint sent,
                                   std::chrono::seconds ttl,
                                   std::chrono::milliseconds margin);

  // Grants a lease and starts keeping it alive.
  // Errors: invalid_argument when the TTL is not positive or the margin is
  // negative or leaves no time (margin >= granted TTL); whatever
  // etcd.LeaseGrant returns (etcd.h: unavailable, timed_out, ...).
  static Result<std::unique_ptr<LeaseKeeper>> Grant(
      Etcd& etcd, Clock& clock, Options options,
      std::function<void()> on_fence);

  ~LeaseKeeper();  // Stop(); the lease is left to expire
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  int64_t lease_id() const { return lease_id_; }
  std::chrono::seconds granted_ttl() const { return ttl_; }
  std::chrono::milliseconds margin() const { return margin_; }

  // The current fencing deadline (moves forward with each renewal).
  Clock::TimePoint deadline() const;

  // True while nothing may have taken over: not fenced, not stopped, and
  // `now` before the deadline. A caller checks it with a fresh Now()
  // right before each act that needs the lease (acknowledging a commit,
  // writing as the controller).
  bool Alive(Clock::TimePoint now) const;

  bool fenced() const { return fenced_.load(); }

  // Stops renewing (joins the threads; waits for at most one keepalive in
  // flight, bounded by the Etcd's request timeout). Afterwards Alive() is
  // false; on_fence is not called. Idempotent.
  void Stop();

  // Stop(), then revokes the lease so that its keys go at once.
  // Errors: those of etcd.LeaseRevoke; not_found (already expired or
  // revoked) is reported as ok — the keys are gone either way.
  Status Revoke();

 private:
  LeaseKeeper(Etcd& etcd, Clock& clock, Lease lease,
              std::chrono::milliseconds margin,
              std::chrono::milliseconds interval,
              std::chrono::milliseconds retry, Clock::TimePoint sent,
              std::function<void()> on_fence);
  void FenceLoop();
  // Marks the keeper fenced and runs on_fence: the first time only, and
  // never after Stop().
  void FenceOnce();
  // Moves the deadline to the rule's value for a renewal sent at `sent`,
  // unless the old deadline has passed already (then fences instead).
  void Renewed(Clock::TimePoint sent, std::chrono::seconds ttl);

  Etcd& etcd_;
  Clock& clock_;
  const int64_t lease_id_;
  const std::chrono::seconds ttl_;
  const std::chrono::milliseconds margin_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds retry_;
  const std::function<void()> on_fence_;

  // Serialises the transitions (a renewal moving the deadline, fencing,
  // stopping) so that a renewal cannot extend a deadline that has fenced,
  // and on_fence cannot run after Stop(). Alive() reads without it.
  std::mutex mu_;
  // Clock::TimePoint's count; written under mu_, read by Alive() lock-free.
  std::atomic<Clock::TimePoint::rep> deadline_;
  std::atomic<bool> fenced_{false};
  std::atomic<bool> stopped_{false};  // Stop() was called
  std::atomic<bool> stop_{false};     // the threads end (stopped or fenced)
  std::mutex join_mu_;                // one Stop() joins
  std::thread renewer_;
  std::thread fencer_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_LEASE_KEEPER_H_
