// Membership and its LeaseKeeper on a FakeEtcd and a FakeClock: every
// time below is fake, so the deadline arithmetic is checked exactly.
#include "kv/cluster/membership.h"

#include <gtest/gtest.h>

#include "cluster_test_util.h"
#include "kv/cluster/etcd_keys.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeCluster;
using testing::FaultyEtcd;
using testing::WaitFor;

constexpr milliseconds kSync(5000);  // real-time bound of every wait

class MembershipTest : public ::testing::Test {
 protected:
  // TTL 6 s: margin max(500 ms, 600 ms) = 600 ms, keepalive every 2 s.
  Membership::Options Opts(uint32_t id, std::string address = "10.0.0.1:7000") {
    Membership::Options o;
    o.cluster = "c";
    o.node_id = id;
    o.address = std::move(address);
    o.started_ms = 1000;
    o.lease.ttl = seconds(6);
    o.clock = &f_.clock;
    return o;
  }

  Result<std::unique_ptr<Membership>> Join(
      Etcd& etcd, uint32_t id, std::string address = "10.0.0.1:7000") {
    return Membership::Join(etcd, Opts(id, std::move(address)),
                            [this] { fences_++; });
  }

  // Moves both clocks and waits until the keeper's two threads sleep again.
  void Step(milliseconds by, int sleepers = 2) {
    f_.Advance(by);
    ASSERT_TRUE(f_.clock.WaitForSleepers(sleepers, kSync));
  }

  KeyValue Registration(uint32_t id) {
    Range r = f_.etcd.Get(keys_.node(id)).value();
    return r.kvs.empty() ? KeyValue{} : r.kvs[0];
  }

  FakeCluster f_;
  EtcdKeys keys_ = EtcdKeys::ForCluster("c").value();
  std::atomic<int> fences_{0};
};

TEST_F(MembershipTest, JoinRegistersOnItsLease) {
  const Clock::TimePoint t0 = f_.clock.Now();
  auto m = Join(f_.etcd, 3);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  KeyValue kv = Registration(3);
  EXPECT_EQ(kv.lease, (*m)->lease_id());
  Result<NodeRegistration> reg = NodeRegistration::Decode(kv.value);
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(*reg, (NodeRegistration{3, "10.0.0.1:7000", 1000}));
  EXPECT_EQ((*m)->deadline(), t0 + milliseconds(5400));
  EXPECT_TRUE((*m)->Alive(f_.clock.Now()));
  EXPECT_FALSE((*m)->fenced());
}

TEST_F(MembershipTest, DuplicateIdIsRefusedNamingTheHolder) {
  auto first = Join(f_.etcd, 3, "10.0.0.1:7000");
  ASSERT_TRUE(first.ok());
  const KeyValue before = Registration(3);
  auto second = Join(f_.etcd, 3, "10.0.0.2:7001");
  ASSERT_EQ(second.status().code(), StatusCode::kBusy);
  EXPECT_NE(second.status().message().find("10.0.0.1:7000"), std::string::npos)
      << second.status().message();
  const KeyValue after = Registration(3);
  EXPECT_EQ(after.value, before.value);
  EXPECT_EQ(after.mod_revision, before.mod_revision);
  EXPECT_TRUE((*first)->Alive(f_.clock.Now()));
  // Once the holder leaves, the id is free.
  ASSERT_TRUE((*first)->Leave().ok());
  EXPECT_TRUE(Join(f_.etcd, 3, "10.0.0.2:7001").ok());
}

TEST_F(MembershipTest, KeepalivesExtendTheDeadlineAndTheLease) {
  const Clock::TimePoint t0 = f_.clock.Now();
  auto m = Join(f_.etcd, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  for (int i = 1; i <= 10; i++) {
    Step(seconds(2));
    EXPECT_EQ((*m)->deadline(), t0 + seconds(2 * i) + milliseconds(5400));
  }
  // 20 s with a 6 s TTL: etcd still holds the registration.
  EXPECT_EQ(Registration(1).lease, (*m)->lease_id());
  EXPECT_TRUE((*m)->Alive(f_.clock.Now()));
  EXPECT_EQ(fences_.load(), 0);
}

TEST_F(MembershipTest, DeadlineCountsFromSendTimeNotAnswerTime) {
  FaultyEtcd slow(f_.etcd);
  const Clock::TimePoint t0 = f_.clock.Now();
  auto m = Join(slow, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  // etcd applies the keepalive at once; its answer takes 1.5 s to arrive.
  slow.SetAfterKeepAlive([this] { f_.Advance(milliseconds(1500)); });
  Step(seconds(2));
  ASSERT_EQ(slow.keepalives.load(), 1);
  EXPECT_EQ(f_.clock.Now(), t0 + milliseconds(3500));
  // Sent at t0 + 2 s: deadline t0 + 2 s + 6 s - 600 ms, not 1.5 s later.
  EXPECT_EQ((*m)->deadline(), t0 + seconds(2) + milliseconds(5400));
}

TEST_F(MembershipTest, FencesExactlyOnceAtTheDeadlineNotBefore) {
  FaultyEtcd faulty(f_.etcd);
  const Clock::TimePoint t0 = f_.clock.Now();
  auto m = Join(faulty, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  faulty.fail_keepalive = true;  // from now on no renewal succeeds
  const Clock::TimePoint deadline = (*m)->deadline();
  ASSERT_EQ(deadline, t0 + milliseconds(5400));
  for (int i = 0; i < 53; i++) Step(milliseconds(100));
  Step(milliseconds(99));  // deadline - 1 ms
  EXPECT_EQ(fences_.load(), 0);
  EXPECT_FALSE((*m)->fenced());
  EXPECT_TRUE((*m)->Alive(f_.clock.Now()));
  EXPECT_GT(faulty.keepalives.load(), 10);  // it kept retrying

  f_.Advance(milliseconds(1));
  ASSERT_TRUE(WaitFor([&] { return fences_.load() >= 1; }));
  EXPECT_TRUE((*m)->fenced());
  EXPECT_FALSE((*m)->Alive(f_.clock.Now()));
  EXPECT_FALSE((*m)->Alive(deadline - milliseconds(1)));  // fenced is final
  // Nothing more: no second callback, no more keepalives.
  ASSERT_TRUE(WaitFor([&] { return f_.clock.sleepers() == 0; }));
  const int sent = faulty.keepalives.load();
  for (int i = 0; i < 10; i++) f_.Advance(seconds(1));
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(fences_.load(), 1);
  EXPECT_EQ(faulty.keepalives.load(), sent);
}

TEST_F(MembershipTest, AnswerArrivingAfterTheDeadlineDoesNotRevive) {
  FaultyEtcd slow(f_.etcd);
  auto m = Join(slow, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  // The keepalive sent at t0 + 2 s is answered after the deadline
  // (t0 + 5.4 s): the node has been fenced meanwhile and stays fenced.
  slow.SetAfterKeepAlive([this] { f_.Advance(milliseconds(4000)); });
  f_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] { return fences_.load() >= 1; }));
  EXPECT_FALSE((*m)->Alive(f_.clock.Now()));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(fences_.load(), 1);
}

TEST_F(MembershipTest, FencesAtOnceWhenEtcdSaysTheLeaseIsGone) {
  auto m = Join(f_.etcd, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  ASSERT_TRUE(f_.etcd.LeaseRevoke((*m)->lease_id()).ok());  // an operator
  f_.Advance(seconds(2));  // the next keepalive hears not_found
  ASSERT_TRUE(WaitFor([&] { return fences_.load() >= 1; }));
  EXPECT_LT(f_.clock.Now(), (*m)->deadline());  // before the deadline
  EXPECT_FALSE((*m)->Alive(f_.clock.Now()));
}

TEST_F(MembershipTest, RejoinAfterFenceTakesANewLease) {
  auto m = Join(f_.etcd, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(f_.clock.WaitForSleepers(2, kSync));
  const int64_t old_lease = (*m)->lease_id();
  f_.etcd.SetUnavailable(true);
  f_.Advance(milliseconds(5400));
  ASSERT_TRUE(WaitFor([&] { return fences_.load() >= 1; }));
  f_.etcd.SetUnavailable(false);
  // etcd has not expired the old lease yet (6 s): a plain Join is refused
  // by our own old registration; Rejoin revokes it first.
  EXPECT_EQ(Registration(1).lease, old_lease);
  EXPECT_EQ(Join(f_.etcd, 1).status().code(), StatusCode::kBusy);
  auto again = (*m)->Rejoin();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_NE((*again)->lease_id(), old_lease);
  EXPECT_EQ(Registration(1).lease, (*again)->lease_id());
  EXPECT_TRUE((*again)->Alive(f_.clock.Now()));
  EXPECT_TRUE((*m)->fenced());
  // Rejoin is only for a fenced membership.
  EXPECT_EQ((*again)->Rejoin().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(MembershipTest, LeaveRevokesTheLeaseAtOnce) {
  auto m = Join(f_.etcd, 1);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->Leave().ok());
  EXPECT_TRUE(f_.etcd.Get(keys_.node(1))->kvs.empty());  // no TTL wait
  EXPECT_FALSE((*m)->Alive(f_.clock.Now()));
  EXPECT_FALSE((*m)->fenced());
  EXPECT_TRUE((*m)->Leave().ok());  // already gone: still ok
  f_.Advance(seconds(10));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(fences_.load(), 0);  // leaving is not fencing
}

TEST_F(MembershipTest, DestroyedWithoutLeaveTheRegistrationExpires) {
  auto m = Join(f_.etcd, 1);
  ASSERT_TRUE(m.ok());
  m->reset();
  EXPECT_FALSE(f_.etcd.Get(keys_.node(1))->kvs.empty());
  f_.Advance(seconds(6));
  EXPECT_TRUE(f_.etcd.Get(keys_.node(1))->kvs.empty());
}

TEST_F(MembershipTest, BadOptionsAndUnreachableEtcdAreErrors) {
  auto code = [&](Membership::Options o) {
    return Membership::Join(f_.etcd, o, nullptr).status().code();
  };
  Membership::Options o = Opts(1);
  o.cluster = "Bad/Name";
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Opts(1, "no-port")), StatusCode::kInvalidArgument);
  o = Opts(1);
  o.lease.margin = seconds(6);
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  o.lease.margin = milliseconds(-1);
  EXPECT_EQ(code(o), StatusCode::kInvalidArgument);
  EXPECT_TRUE(f_.etcd.GetPrefix("")->kvs.empty());  // nothing left behind
  f_.etcd.SetUnavailable(true);
  EXPECT_EQ(code(Opts(1)), StatusCode::kUnavailable);
}

TEST_F(MembershipTest, CorruptHolderIsReported) {
  ASSERT_TRUE(f_.etcd.Put(keys_.node(4), "garbage").ok());
  auto m = Join(f_.etcd, 4);
  EXPECT_EQ(m.status().code(), StatusCode::kCorruption);
  EXPECT_NE(m.status().message().find("etcdctl"), std::string::npos);
  EXPECT_EQ(Registration(4).value, "garbage");
}

}  // namespace
}  // namespace kv::cluster
