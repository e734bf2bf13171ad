// Membership, fencing and the controller against a real etcd
// (integration; etcd_process.h starts one per test). Real clocks: the
// bounds below are what the deadline rule promises, with room for a
// loaded 2-vCPU machine where it does not matter for correctness.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "cluster_test_util.h"
#include "etcd_process.h"
#include "kv/cluster/controller.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster/membership.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::EtcdBinaryMissing;
using testing::EtcdProcess;
using testing::WaitFor;

class MemberEtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip = EtcdBinaryMissing();
    if (!skip.empty()) GTEST_SKIP() << skip;
    Status s = etcd_.Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EtcdHttp::Options o;
    o.endpoints = {etcd_.endpoint()};
    o.connect_timeout = milliseconds(500);
    o.request_timeout = milliseconds(1000);  // a hung etcd costs 1 s a call
    auto http = EtcdHttp::Open(o);
    ASSERT_TRUE(http.ok()) << http.status().ToString();
    http_ = std::move(*http);
  }

  Membership::Options NodeOpts(uint32_t id) {
    Membership::Options o;
    o.cluster = "it";
    o.node_id = id;
    o.address = "127.0.0.1:" + std::to_string(7000 + id);
    o.lease.ttl = seconds(2);  // margin 500 ms, keepalive every ~667 ms
    return o;
  }

  EtcdProcess etcd_;
  std::unique_ptr<EtcdHttp> http_;
};

TEST_F(MemberEtcdTest, KeepsItsLeaseFor3sWithTtl2s) {
  auto m = Membership::Join(*http_, NodeOpts(1), nullptr);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Clock::TimePoint first = (*m)->deadline();
  const auto end = std::chrono::steady_clock::now() + seconds(3);
  while (std::chrono::steady_clock::now() < end) {
    ASSERT_TRUE((*m)->Alive((*m)->clock().Now()));
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_FALSE((*m)->fenced());
  EXPECT_GT((*m)->deadline(), first + seconds(2));  // renewed meanwhile
  Range r = http_->Get((*m)->key()).value();
  ASSERT_EQ(r.kvs.size(), 1u);
  EXPECT_EQ(r.kvs[0].lease, (*m)->lease_id());
  ASSERT_TRUE((*m)->Leave().ok());
  EXPECT_TRUE(http_->Get((*m)->key())->kvs.empty());
}

TEST_F(MemberEtcdTest, FencesAtItsDeadlineWhenEtcdHangsNeverBefore) {
  std::atomic<Clock::TimePoint::rep> fenced_at{0};
  std::atomic<int> fences{0};
  auto m = Membership::Join(*http_, NodeOpts(1), [&] {
    fenced_at = std::chrono::steady_clock::now().time_since_epoch().count();
    fences++;
  });
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::this_thread::sleep_for(milliseconds(1000));
  etcd_.Pause();
  // Alive() holds exactly until the deadline.
  while (fences.load() == 0) {
    const Clock::TimePoint now = (*m)->clock().Now();
    if (now < (*m)->deadline() - milliseconds(5)) {
      ASSERT_TRUE((*m)->Alive(now));
    }
    ASSERT_LT(now, (*m)->deadline() + seconds(3)) << "never fenced";
    std::this_thread::sleep_for(milliseconds(2));
  }
  const Clock::TimePoint at{Clock::Duration(fenced_at.load())};
  const Clock::TimePoint deadline = (*m)->deadline();
  EXPECT_GE(at, deadline);
  EXPECT_LE(at - deadline, milliseconds(200));
  std::printf(
      "fenced %lld us after the deadline\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::microseconds>(at - deadline)
              .count()));
  EXPECT_FALSE((*m)->Alive((*m)->clock().Now()));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(fences.load(), 1);
  // etcd back: the node rejoins with a new lease.
  etcd_.Resume();
  auto again = (*m)->Rejoin();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_NE((*again)->lease_id(), (*m)->lease_id());
  EXPECT_TRUE((*again)->Alive((*again)->clock().Now()));
}

TEST_F(MemberEtcdTest, OtherControllerTakesOverWhenTheLeadersLeaseIsRevoked) {
  std::map<uint32_t, std::unique_ptr<Membership>> nodes;
  for (uint32_t id : {1, 2, 3}) {
    auto m = Membership::Join(*http_, NodeOpts(id), nullptr);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    nodes[id] = std::move(*m);
  }
  auto opts = [](uint32_t id) {
    Controller::Options o;
    o.cluster = "it";
    o.node_id = id;
    o.desired = {{"users", 8, 2}};
    o.lease.ttl = seconds(2);
    o.poll = milliseconds(50);
    return o;
  };
  auto a = Controller::Start(*http_, opts(1));
  auto b = Controller::Start(*http_, opts(2));
  ASSERT_TRUE(a.ok() && b.ok());
  auto leading = [](Controller& c) {
    return c.election().Leading(c.election().clock().Now()).has_value();
  };
  ASSERT_TRUE(WaitFor([&] { return leading(**a) || leading(**b); }));
  Controller& old = leading(**a) ? **a : **b;
  Controller& other = &old == &**a ? **b : **a;
  ASSERT_TRUE(WaitFor([&] { return old.stats().writes == 1; }));

  // An operator revokes the leader's lease: the key goes at once.
  const int64_t lease =
      old.election().Leading(old.election().clock().Now())->lease;
  ASSERT_TRUE(http_->LeaseRevoke(lease).ok());
  ASSERT_TRUE(WaitFor([&] { return leading(other); }));

  // The new leader serves the next change: node 3 leaves.
  ASSERT_TRUE(nodes[3]->Leave().ok());
  auto without3 = [&] {
    Range r = http_->Get("/rpkv/it/map").value();
    if (r.kvs.empty()) return false;
    Result<ClusterMap> m = ClusterMap::Decode(r.kvs[0].value);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return false;
    for (const Shard& s : m->keyspaces().at(0).shards) {
      for (uint32_t n : s.replicas) {
        if (n == 3) return false;
      }
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(without3, seconds(10)));
  // (The map can be seen in etcd before the writer has counted it.)
  // The new leader's writes: the repair (node 3 dropped; its shards run
  // degraded), then one join record for a new backup (max_moves 1, and
  // nothing runs it here).
  EXPECT_TRUE(WaitFor([&] { return other.stats().writes == 2; }));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(old.stats().writes, 1);
  EXPECT_EQ(other.stats().writes, 2);
}

}  // namespace
}  // namespace kv::cluster
