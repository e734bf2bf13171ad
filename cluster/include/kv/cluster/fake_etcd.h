// kv::cluster::FakeEtcd: an in-process Etcd (etcd.h) for unit tests of the
// code above it: one revision counter, an event history for watches,
// compaction, transactions with the same compares, and leases on a clock
// that moves only when the test says (AdvanceClock), so lease expiry is
// deterministic. The contract suite (tests/etcd_contract_test.h) runs
// against it and against a real etcd, so the two keep one behaviour.
//
// Deliberate differences from etcd: no network (so no timed_out or
// corruption — SetUnavailable() stands in for an unreachable etcd), and
// leases expire at exactly their deadline on AdvanceClock() instead of
// up to ~0.5 s later.
//
// Thread-safety: every method, from any thread. Watches must not outlive
// the FakeEtcd.
#ifndef KV_CLUSTER_FAKE_ETCD_H_
#define KV_CLUSTER_FAKE_ETCD_H_

#include <chrono>
#include <memory>

#include "kv/cluster/etcd.h"

namespace kv::cluster {

struct FakeEtcdState;  // src/fake_etcd_state.h

class FakeEtcd : public Etcd {
 public:
  struct Options {
    // Shorter TTLs are raised to this, as etcd raises them to 1.5 x its
    // election timeout (2 s with default timings).
    int64_t min_lease_ttl_s = 2;
  };

  FakeEtcd();
  explicit FakeEtcd(Options options);
  ~FakeEtcd() override;

  Result<Range> Get(std::string_view key) override;
  Result<Range> GetPrefix(std::string_view prefix) override;
  Result<int64_t> Put(std::string_view key, std::string_view value,
                      int64_t lease = 0) override;
  Result<DeleteResult> Delete(std::string_view key) override;
  Result<TxnResult> Txn(const std::vector<Compare>& compares,
                        const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override;
  Result<Lease> LeaseGrant(int64_t ttl_s) override;
  Result<int64_t> LeaseKeepAlive(int64_t id) override;
  Status LeaseRevoke(int64_t id) override;
  Status Compact(int64_t revision) override;
  Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix,
                                           int64_t start_revision) override;

  // Test controls.
  // Moves the lease clock forward; leases whose deadline is reached expire
  // (each deletes its keys at one new revision, as etcd's revoke does).
  void AdvanceClock(std::chrono::milliseconds by);
  // While down, every call returns unavailable and watches deliver
  // nothing (their Next returns unavailable after its timeout); their
  // history is kept, so they resume when it comes back.
  void SetUnavailable(bool down);
  // While held, watches deliver nothing (as a slow watcher that falls
  // behind), but every other call works; they catch up (or meet a
  // compaction, after BreakWatchStreams) when released.
  void HoldWatches(bool held);
  // Makes every open watch lose its stream, as a dropped connection does;
  // they resume from their next revision on their next Next().
  void BreakWatchStreams();
  // The current store revision.
  int64_t revision() const;

 private:
  std::shared_ptr<FakeEtcdState> s_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_FAKE_ETCD_H_
