// kv::cluster::Membership: a node's registration in the cluster and the
// fencing deadline that comes with it (docs/cluster.md, "Membership and
// fencing").
//
// Join grants a lease and creates /rpkv/<cluster>/nodes/<id> on it in one
// transaction that succeeds only while the key is absent, so two live
// nodes never share an id. A LeaseKeeper (lease_keeper.h) renews the lease
// every TTL/3 and computes the deadline from the SEND time of the last
// successful keepalive. The server calls Alive(clock.Now()) right before
// acknowledging a commit: false from the deadline on. When the deadline
// passes without a renewal (or etcd says the lease is gone) the membership
// is fenced: on_fence runs once, from the keeper's thread — there the
// server revokes its read registrations and disconnects sessions — and the
// membership is over. A fenced node comes back with Rejoin() (a new lease,
// a new registration); the controller has treated it as dead meanwhile.
//
// Thread-safety: every method from any thread. `etcd` and the clock must
// outlive the Membership; on_fence must not call Leave() or destroy it.
#ifndef KV_CLUSTER_MEMBERSHIP_H_
#define KV_CLUSTER_MEMBERSHIP_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kv/cluster/clock.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/lease_keeper.h"
#include "kv/cluster/node_registration.h"
#include "kv/status.h"

namespace kv::cluster {

class Membership {
 public:
  struct Options {
    std::string cluster;  // etcd_keys.h rules
    uint32_t node_id = 0;
    std::string address;         // host:port clients connect to
    int64_t started_ms = 0;      // the process start (wall clock); informative
    LeaseKeeper::Options lease;  // TTL 5 s, margin max(500 ms, TTL/10)
    Clock* clock = nullptr;      // nullptr: a SteadyClock of its own
  };

  // Registers the node. On success it is a member until fenced or Leave().
  // Errors:
  //   invalid_argument  bad cluster name, node id 0, bad address, bad
  //                     lease options;
  //   busy              another live node holds this id; the message names
  //                     its address (its registration goes when its lease
  //                     expires, at most one TTL after it stops);
  //   corruption        the registration found under our id is garbage;
  //   anything etcd.h lists for LeaseGrant or Txn (unavailable, ...).
  // A failed Join leaves nothing behind (its lease is revoked).
  static Result<std::unique_ptr<Membership>> Join(
      Etcd& etcd, Options options, std::function<void()> on_fence);

  ~Membership();  // stops renewing; the lease is left to expire (crash-like)
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Joins again after a fence: revokes the old lease (its registration
  // goes with it, if etcd has not expired it yet) and Joins with the same
  // options and callback. This object stays fenced; use the returned one.
  // Errors: invalid_argument when not fenced; those of Join; those of
  // LeaseRevoke other than not_found.
  Result<std::unique_ptr<Membership>> Rejoin();

  // Clean shutdown: stops renewing and revokes the lease, so the
  // registration disappears at once (bounded by the Etcd's request
  // timeout). Alive() is false afterwards; on_fence is not called.
  // Errors: those of LeaseRevoke except not_found (then the lease had
  // expired: the registration is gone anyway).
  Status Leave();

  // The fencing deadline (lease_keeper.h), and whether `now` is before it
  // and the membership neither fenced nor left.
  Clock::TimePoint deadline() const { return keeper_->deadline(); }
  bool Alive(Clock::TimePoint now) const { return keeper_->Alive(now); }
  bool fenced() const { return keeper_->fenced(); }

  Clock& clock() const { return *clock_; }
  int64_t lease_id() const { return keeper_->lease_id(); }
  const NodeRegistration& registration() const { return registration_; }
  const std::string& key() const { return key_; }

 private:
  Membership(Etcd& etcd, Options options, std::function<void()> on_fence,
             std::unique_ptr<Clock> own_clock)
      : etcd_(etcd),
        options_(std::move(options)),
        on_fence_(std::move(on_fence)),
        own_clock_(std::move(own_clock)),
        clock_(options_.clock ? options_.clock : own_clock_.get()) {}

  Etcd& etcd_;
  const Options options_;
  const std::function<void()> on_fence_;
  std::unique_ptr<Clock> own_clock_;  // when options_.clock is nullptr
  Clock* const clock_;
  NodeRegistration registration_;
  std::string key_;
  // Declared last: destroyed (its threads joined) first.
  std::unique_ptr<LeaseKeeper> keeper_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_MEMBERSHIP_H_
