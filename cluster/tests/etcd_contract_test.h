// The Etcd contract (etcd.h, etcd_watch.h) as typed GoogleTest suites,
// instantiated against FakeEtcd (fake_contract_test.cc, label unit) and a
// real etcd (real_contract_test.cc, label integration). An Env type gives
// the suite its Etcd and the few things that differ between the two:
//
//   static std::string SkipReason();   // non-empty: GTEST_SKIP with it
//   Status SetUp();
//   Etcd& etcd();
//   void AdvanceTime(std::chrono::milliseconds);  // fake clock / sleep
//   Status BreakWatchStreams();  // fake: drop streams; real: restart etcd
#ifndef KV_CLUSTER_TESTS_ETCD_CONTRACT_TEST_H_
#define KV_CLUSTER_TESTS_ETCD_CONTRACT_TEST_H_

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kv/cluster/etcd.h"

namespace kv::cluster::testing {

using std::chrono::milliseconds;

template <typename Env>
class EtcdContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip = Env::SkipReason();
    if (!skip.empty()) GTEST_SKIP() << skip;
    Status s = env_.SetUp();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  Etcd& etcd() { return env_.etcd(); }

  int64_t Revision() {
    Result<Range> r = etcd().Get("probe");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->revision : -1;
  }

  // The value of `key`, "<absent>" when absent, "<error: ...>" on error.
  std::string ValueOf(std::string_view key) {
    Result<Range> r = etcd().Get(key);
    if (!r.ok()) return "<error: " + r.status().ToString() + ">";
    return r->kvs.empty() ? "<absent>" : r->kvs[0].value;
  }

  // Lets time pass until `key` is absent; false if it is still there after
  // `limit` (etcd revokes an expired lease up to ~0.5 s after its TTL).
  bool EventuallyAbsent(std::string_view key, milliseconds limit) {
    for (milliseconds waited{0}; waited <= limit; waited += milliseconds(100)) {
      if (ValueOf(key) == "<absent>") return true;
      env_.AdvanceTime(milliseconds(100));
    }
    return false;
  }

  // Calls Next until `n` events arrived or `timeout` passed.
  Result<std::vector<WatchEvent>> Collect(EtcdWatch& w, size_t n,
                                          milliseconds timeout) {
    std::vector<WatchEvent> all;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
      Result<std::vector<WatchEvent>> got = w.Next(milliseconds(500));
      if (!got.ok()) return got.status();
      for (WatchEvent& e : *got) all.push_back(std::move(e));
    }
    return all;
  }

  std::unique_ptr<EtcdWatch> OpenWatch(std::string_view prefix, int64_t rev) {
    Result<std::unique_ptr<EtcdWatch>> w = etcd().Watch(prefix, rev);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(w.value()) : nullptr;
  }

  Env env_;
};

// Two suites on one fixture: keys and transactions
// (etcd_contract_kv_tests.h), leases and watches
// (etcd_contract_watch_tests.h). Those headers hold the TYPED_TEST_Ps and
// their REGISTER; an instantiating .cc includes both once.
template <typename Env>
class EtcdKvContractTest : public EtcdContractTest<Env> {};
template <typename Env>
class EtcdWatchContractTest : public EtcdContractTest<Env> {};

}  // namespace kv::cluster::testing

#endif  // KV_CLUSTER_TESTS_ETCD_CONTRACT_TEST_H_
