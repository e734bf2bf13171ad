// Election on a FakeEtcd and a FakeClock. Each candidate talks to etcd
// through its own FaultyEtcd, so a test can cut one off.
#include "kv/cluster/election.h"

#include <gtest/gtest.h>

#include "cluster_test_util.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeCluster;
using testing::FaultyEtcd;
using testing::WaitFor;

constexpr milliseconds kSync(5000);

class ElectionTest : public ::testing::Test {
 protected:
  void Start(int n) {
    for (int i = static_cast<int>(c_.size()), end = i + n; i < end; i++) {
      links_.push_back(std::make_unique<FaultyEtcd>(f_.etcd));
      Election::Options o;
      o.cluster = "c";
      o.node_id = static_cast<uint32_t>(i + 1);
      o.lease.ttl = seconds(6);  // margin 600 ms, keepalive every 2 s
      o.clock = &f_.clock;
      o.poll = milliseconds(20);
      auto e = Election::Start(*links_.back(), o);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      c_.push_back(std::move(*e));
    }
  }

  // Index of the one candidate leading now; -1 if none. Fails the test
  // when two lead at the same (fake) instant.
  int Leader() {
    const Clock::TimePoint now = f_.clock.Now();
    int leader = -1;
    for (size_t i = 0; i < c_.size(); i++) {
      if (c_[i] && c_[i]->Leading(now)) {
        EXPECT_EQ(leader, -1) << "two leaders: " << leader << " and " << i;
        leader = static_cast<int>(i);
      }
    }
    return leader;
  }

  std::string KeyValueNow() {
    Range r = f_.etcd.Get("/rpkv/c/controller").value();
    return r.kvs.empty() ? "" : r.kvs[0].value;
  }

  FakeCluster f_;
  std::vector<std::unique_ptr<FaultyEtcd>> links_;  // outlive c_
  std::vector<std::unique_ptr<Election>> c_;

  void TearDown() override { c_.clear(); }
};

TEST_F(ElectionTest, OneLeaderAmongThreeCandidates) {
  Start(3);
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
  const int leader = Leader();
  EXPECT_EQ(KeyValueNow(), std::to_string(leader + 1));
  // The others keep waiting (sampled for a while, with keepalives going).
  for (int i = 0; i < 50; i++) {
    EXPECT_EQ(Leader(), leader);
    if (i % 10 == 0) {
      f_.Advance(seconds(2));
      ASSERT_TRUE(f_.clock.WaitForSleepers(6, kSync));
    }
    std::this_thread::sleep_for(milliseconds(2));
  }
  int wins = 0;
  for (auto& c : c_) wins += c->terms_won();
  EXPECT_EQ(wins, 1);
}

TEST_F(ElectionTest, ResignHandsOverWithoutWaitingForTheLease) {
  Start(3);
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
  const int first = Leader();
  ASSERT_TRUE(c_[first]->Resign().ok());
  EXPECT_FALSE(c_[first]->Leading(f_.clock.Now()));
  // No clock movement needed: the key was deleted, not left to expire.
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
  EXPECT_NE(Leader(), first);
  EXPECT_EQ(KeyValueNow(), std::to_string(Leader() + 1));
  EXPECT_TRUE(c_[first]->Resign().ok());  // idempotent
}

TEST_F(ElectionTest, GuardFailsOnceTheKeyIsNotThisTerms) {
  Start(1);
  ASSERT_TRUE(c_[0]->WaitLeading(kSync));
  const Election::Term term = *c_[0]->Leading(f_.clock.Now());
  auto guarded = [&] {
    return f_.etcd.Txn({c_[0]->Guard(term)}, {TxnOp::Put("x", "1")}, {})
        ->succeeded;
  };
  EXPECT_TRUE(guarded());
  ASSERT_TRUE(f_.etcd.Put("/rpkv/c/controller", "9").ok());  // an intruder
  EXPECT_FALSE(guarded());
  // The leader notices the change and steps down.
  ASSERT_TRUE(WaitFor([&] { return !c_[0]->Leading(f_.clock.Now()); }));
  // Resign must not delete a key that is not its own.
  ASSERT_TRUE(c_[0]->Resign().ok());
  EXPECT_EQ(KeyValueNow(), "9");
}

// The leader is cut off from etcd: it stops leading at its deadline (send
// time of its last keepalive + TTL - margin); nobody else can win before
// etcd expires its lease (send time + TTL at the earliest).
TEST_F(ElectionTest, CutOffLeaderStepsDownAtItsDeadlineBeforeAnyOtherWins) {
  Start(3);
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
  ASSERT_TRUE(f_.clock.WaitForSleepers(6, kSync));
  const int old = Leader();
  const Clock::TimePoint t0 = f_.clock.Now();  // its lease's grant/renewal
  links_[old]->partitioned = true;
  Clock::TimePoint stepped_down{}, other_won{};
  for (int step = 0; step < 100 && other_won == Clock::TimePoint{}; step++) {
    f_.Advance(milliseconds(100));
    // Its deadline needs no thread: Leading() is false from it on.
    const Clock::TimePoint now = f_.clock.Now();
    if (stepped_down == Clock::TimePoint{} && !c_[old]->Leading(now)) {
      stepped_down = now;
    }
    // Give the others time to react to etcd's expiry, if it happened.
    ASSERT_TRUE(f_.clock.WaitForSleepers(4, kSync));
    if (now >= t0 + seconds(6)) {
      ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
    }
    const int l = Leader();
    if (l >= 0 && l != old) other_won = f_.clock.Now();
  }
  ASSERT_NE(stepped_down, Clock::TimePoint{});
  ASSERT_NE(other_won, Clock::TimePoint{});
  EXPECT_LE(stepped_down, t0 + milliseconds(5400));
  EXPECT_GE(stepped_down, t0 + milliseconds(5400) - milliseconds(100));
  EXPECT_GE(other_won, t0 + seconds(6));
  EXPECT_LT(stepped_down, other_won);
}

TEST_F(ElectionTest, FailoverWhenTheLeadersLeaseExpiresAndTheOldOneWaits) {
  Start(2);
  ASSERT_TRUE(WaitFor([&] { return Leader() >= 0; }));
  const int old = Leader();
  links_[old]->partitioned = true;
  // Each step waits until every keeper thread has done what was due: four
  // sleepers until the old leader fences at 5.4 s, then the other's two.
  // (Waiting for fewer let the other's renewer fall behind the fake clock
  // under load: it fenced itself after winning, and its own key then
  // blocked it until etcd expired its lease, which needs more time.)
  for (int i = 0; i < 7; i++) {
    f_.Advance(seconds(1));
    const int keepers_asleep = i < 5 ? 4 : 2;
    ASSERT_TRUE(WaitFor([&] { return f_.clock.sleepers() >= keepers_asleep; }));
  }
  ASSERT_TRUE(WaitFor([&] { return Leader() == 1 - old; }));
  EXPECT_EQ(KeyValueNow(), std::to_string(2 - old));
  // Back in touch, the old leader campaigns with a new lease and waits.
  links_[old]->partitioned = false;
  for (int i = 0; i < 5; i++) {
    f_.Advance(seconds(1));
    ASSERT_TRUE(WaitFor([&] { return f_.clock.sleepers() >= 4; }));
    EXPECT_EQ(Leader(), 1 - old);
  }
  EXPECT_EQ(c_[old]->terms_won(), 1);
}

TEST_F(ElectionTest, WaitingCandidateSurvivesACompaction) {
  Start(1);
  ASSERT_TRUE(c_[0]->WaitLeading(kSync));
  Start(1);  // c_[1] waits on a watch of the key
  std::this_thread::sleep_for(milliseconds(50));
  for (int i = 0; i < 5; i++) ASSERT_TRUE(f_.etcd.Put("/other", "x").ok());
  ASSERT_TRUE(f_.etcd.Compact(f_.etcd.revision()).ok());
  f_.etcd.BreakWatchStreams();  // its resume point is compacted now
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(c_[0]->Resign().ok());
  ASSERT_TRUE(c_[1]->WaitLeading(kSync));
  EXPECT_EQ(KeyValueNow(), "2");
}

TEST_F(ElectionTest, BadOptionsAreRefused) {
  Election::Options o;
  o.cluster = "c";
  EXPECT_EQ(Election::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);  // node 0
  o.node_id = 1;
  o.poll = milliseconds(0);
  EXPECT_EQ(Election::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);
  o.poll = milliseconds(10);
  o.cluster = "";
  EXPECT_EQ(Election::Start(f_.etcd, o).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kv::cluster
