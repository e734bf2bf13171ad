// Test helpers for the code above the Etcd interface: a FakeEtcd and a
// FakeClock moved together, an Etcd wrapper that injects faults and counts
// calls, and a bounded wait.
#ifndef KV_CLUSTER_TESTS_CLUSTER_TEST_UTIL_H_
#define KV_CLUSTER_TESTS_CLUSTER_TEST_UTIL_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv/cluster/etcd.h"
#include "kv/cluster/fake_clock.h"
#include "kv/cluster/fake_etcd.h"

namespace kv::cluster::testing {

// etcd's lease clock and the nodes' clock, advanced together.
struct FakeCluster {
  FakeEtcd etcd;
  FakeClock clock;

  void Advance(std::chrono::milliseconds by) {
    etcd.AdvanceClock(by);
    clock.Advance(by);
  }
};

// Polls `done` (real time) until it is true or `timeout` passes.
inline bool WaitFor(
    const std::function<bool()>& done,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// Forwards to `inner`, with faults a test switches on and call counts.
class FaultyEtcd : public Etcd {
 public:
  explicit FaultyEtcd(Etcd& inner) : inner_(inner) {}

  // Every call fails as unavailable (a node cut off from etcd).
  std::atomic<bool> partitioned{false};
  // Keepalives fail as unavailable.
  std::atomic<bool> fail_keepalive{false};
  std::atomic<int> keepalives{0};  // attempted

  // Runs after etcd applied a keepalive, before its answer is returned: a
  // slow answer (advance the fake clock in it).
  void SetAfterKeepAlive(std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu_);
    after_keepalive_ = std::move(f);
  }
  // Runs once, before the next Txn whose success branch puts `key`.
  void SetBeforeTxnPutting(std::string key, std::function<void()> f) {
    std::lock_guard<std::mutex> l(mu_);
    before_key_ = std::move(key);
    before_txn_ = std::move(f);
  }
  // Transactions whose success branch puts `key` (attempted).
  int TxnsPutting(const std::string& key) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = txn_puts_.find(key);
    return it == txn_puts_.end() ? 0 : it->second;
  }

  Result<Range> Get(std::string_view key) override {
    if (partitioned) return Cut();
    return inner_.Get(key);
  }
  Result<Range> GetPrefix(std::string_view prefix) override {
    if (partitioned) return Cut();
    return inner_.GetPrefix(prefix);
  }
  Result<int64_t> Put(std::string_view key, std::string_view value,
                      int64_t lease) override {
    if (partitioned) return Cut();
    return inner_.Put(key, value, lease);
  }
  Result<DeleteResult> Delete(std::string_view key) override {
    if (partitioned) return Cut();
    return inner_.Delete(key);
  }
  Result<TxnResult> Txn(const std::vector<Compare>& compares,
                        const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override {
    if (partitioned) return Cut();
    std::function<void()> before;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const TxnOp& op : success) {
        if (op.type != TxnOp::Type::kPut) continue;
        txn_puts_[op.key]++;
        if (before_txn_ && op.key == before_key_)
          std::swap(before, before_txn_);
      }
    }
    if (before) before();
    return inner_.Txn(compares, success, failure);
  }
  Result<Lease> LeaseGrant(int64_t ttl_s) override {
    if (partitioned) return Cut();
    return inner_.LeaseGrant(ttl_s);
  }
  Result<int64_t> LeaseKeepAlive(int64_t id) override {
    keepalives++;
    if (partitioned || fail_keepalive) return Cut();
    Result<int64_t> r = inner_.LeaseKeepAlive(id);
    std::function<void()> after;
    {
      std::lock_guard<std::mutex> l(mu_);
      after = after_keepalive_;
    }
    if (after) after();
    return r;
  }
  Status LeaseRevoke(int64_t id) override {
    if (partitioned) return Cut();
    return inner_.LeaseRevoke(id);
  }
  Status Compact(int64_t revision) override {
    if (partitioned) return Cut();
    return inner_.Compact(revision);
  }
  Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix,
                                           int64_t start_revision) override {
    if (partitioned) return Cut();
    return inner_.Watch(prefix, start_revision);
  }

 private:
  static Status Cut() {
    return Status::Unavailable("etcd (faulty wrapper): cut off by the test");
  }

  Etcd& inner_;
  mutable std::mutex mu_;
  std::function<void()> after_keepalive_;
  std::string before_key_;
  std::function<void()> before_txn_;
  std::map<std::string, int> txn_puts_;
};

}  // namespace kv::cluster::testing

#endif  // KV_CLUSTER_TESTS_CLUSTER_TEST_UTIL_H_
