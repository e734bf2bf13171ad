// The Etcd contract, leases and watches (see etcd_contract_test.h).
// Include once, from an instantiating .cc.
#include <thread>

#include "etcd_contract_test.h"

namespace kv::cluster::testing {

TYPED_TEST_SUITE_P(EtcdWatchContractTest);

constexpr milliseconds kExpirySlack{2500};

TYPED_TEST_P(EtcdWatchContractTest, LeaseGrantGivesAtLeastTheTtlAskedFor) {
  Result<Lease> l = this->etcd().LeaseGrant(1);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_GT(l->id, 0);
  EXPECT_GE(l->ttl_s, 1);
  Result<Lease> m = this->etcd().LeaseGrant(60);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->ttl_s, 60);
  EXPECT_NE(m->id, l->id);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{9'000'000'001}}) {
    EXPECT_TRUE(this->etcd().LeaseGrant(bad).status().IsInvalidArgument())
        << bad;
  }
}

TYPED_TEST_P(EtcdWatchContractTest, LeaseExpiryRemovesItsKeysOnly) {
  Result<Lease> l = this->etcd().LeaseGrant(2);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(this->etcd().Put("node/a", "up", l->id).ok());
  ASSERT_TRUE(this->etcd().Put("node/b", "up", l->id).ok());
  ASSERT_TRUE(this->etcd().Put("map", "stays").ok());
  Result<Range> g = this->etcd().Get("node/a");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->kvs.at(0).lease, l->id);
  this->env_.AdvanceTime(milliseconds(l->ttl_s * 1000));
  EXPECT_TRUE(this->EventuallyAbsent("node/a", kExpirySlack));
  EXPECT_TRUE(this->EventuallyAbsent("node/b", milliseconds(0)));
  EXPECT_EQ(this->ValueOf("map"), "stays");
  EXPECT_TRUE(this->etcd().LeaseKeepAlive(l->id).status().IsNotFound());
  EXPECT_TRUE(this->etcd().Put("node/a", "again", l->id).status().IsNotFound());
  EXPECT_EQ(this->ValueOf("node/a"), "<absent>");
}

TYPED_TEST_P(EtcdWatchContractTest, KeepAliveExtendsTheLease) {
  Result<Lease> l = this->etcd().LeaseGrant(2);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(this->etcd().Put("node/a", "up", l->id).ok());
  // Twice the TTL in all, kept alive at TTL/2.
  for (int i = 0; i < 4; ++i) {
    this->env_.AdvanceTime(milliseconds(l->ttl_s * 500));
    Result<int64_t> ttl = this->etcd().LeaseKeepAlive(l->id);
    ASSERT_TRUE(ttl.ok()) << i << ": " << ttl.status().ToString();
    EXPECT_EQ(*ttl, l->ttl_s);
    EXPECT_EQ(this->ValueOf("node/a"), "up") << i;
  }
  this->env_.AdvanceTime(milliseconds(l->ttl_s * 1000));
  EXPECT_TRUE(this->EventuallyAbsent("node/a", kExpirySlack));
}

TYPED_TEST_P(EtcdWatchContractTest, RevokeDeletesKeysAtOnceThenNotFound) {
  Result<Lease> l = this->etcd().LeaseGrant(60);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(this->etcd().Put("node/a", "up", l->id).ok());
  ASSERT_TRUE(this->etcd().LeaseRevoke(l->id).ok());
  EXPECT_EQ(this->ValueOf("node/a"), "<absent>");
  EXPECT_TRUE(this->etcd().LeaseRevoke(l->id).IsNotFound());
  EXPECT_TRUE(this->etcd().LeaseKeepAlive(l->id).status().IsNotFound());
  EXPECT_TRUE(this->etcd().LeaseKeepAlive(12345).status().IsNotFound());
  EXPECT_TRUE(this->etcd().LeaseKeepAlive(0).status().IsInvalidArgument());
  EXPECT_TRUE(this->etcd().LeaseRevoke(-3).IsInvalidArgument());
}

TYPED_TEST_P(EtcdWatchContractTest, WatchSeesChangesInOrder) {
  Result<Range> r = this->etcd().GetPrefix("m/");
  ASSERT_TRUE(r.ok());
  auto w = this->OpenWatch("m/", r->revision + 1);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->next_revision(), r->revision + 1);
  ASSERT_TRUE(this->etcd().Put("m/a", "1").ok());
  ASSERT_TRUE(this->etcd().Put("other", "x").ok());  // not watched
  ASSERT_TRUE(this->etcd().Put("m/b", "2").ok());
  ASSERT_TRUE(this->etcd().Delete("m/a").ok());
  Result<TxnResult> t = this->etcd().Txn(
      {}, {TxnOp::Put("m/c", "3"), TxnOp::Put("m/d", "4")}, {});
  ASSERT_TRUE(t.ok());
  auto got = this->Collect(*w, 5, milliseconds(10000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 5u);
  const auto& e = *got;
  EXPECT_EQ(e[0].type, WatchEvent::Type::kPut);
  EXPECT_EQ(e[0].key, "m/a");
  EXPECT_EQ(e[0].value, "1");
  EXPECT_EQ(e[1].key, "m/b");
  EXPECT_EQ(e[1].mod_revision, e[0].mod_revision + 2);
  EXPECT_EQ(e[2].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(e[2].key, "m/a");
  EXPECT_EQ(e[2].value, "");
  EXPECT_EQ(e[3].mod_revision, t->revision);
  EXPECT_EQ(e[4].mod_revision, t->revision);
  EXPECT_EQ(w->next_revision(), t->revision + 1);
  Result<std::vector<WatchEvent>> none = w->Next(milliseconds(200));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

TYPED_TEST_P(EtcdWatchContractTest, WatchFromZeroSeesOnlyLaterChanges) {
  ASSERT_TRUE(this->etcd().Put("m/old", "1").ok());
  auto w = this->OpenWatch("m/", 0);
  ASSERT_NE(w, nullptr);
  Result<std::vector<WatchEvent>> first = w->Next(milliseconds(300));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->empty());
  ASSERT_GT(w->next_revision(), 0) << "the stream is not established";
  ASSERT_TRUE(this->etcd().Put("m/new", "2").ok());
  auto got = this->Collect(*w, 1, milliseconds(10000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->at(0).key, "m/new");
}

TYPED_TEST_P(EtcdWatchContractTest, WatchFromThePastReplaysHistory) {
  Result<int64_t> r1 = this->etcd().Put("m/a", "1");
  ASSERT_TRUE(r1.ok());
  ASSERT_TRUE(this->etcd().Put("m/a", "2").ok());
  auto w = this->OpenWatch("m/", *r1);
  auto got = this->Collect(*w, 2, milliseconds(10000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ(got->at(0).value, "1");
  EXPECT_EQ(got->at(1).value, "2");
}

// Resume from last + 1: after the stream breaks (fake: dropped; real:
// etcd restarted on the same data), each event arrives exactly once.
TYPED_TEST_P(EtcdWatchContractTest, WatchResumesAfterBreakWithoutLossOrRepeat) {
  auto w = this->OpenWatch("m/", this->Revision() + 1);
  ASSERT_TRUE(this->etcd().Put("m/1", "a").ok());
  ASSERT_TRUE(this->etcd().Put("m/2", "b").ok());
  auto before = this->Collect(*w, 2, milliseconds(10000));
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_EQ(before->size(), 2u);
  const int64_t resume = w->next_revision();
  Status broke = this->env_.BreakWatchStreams();
  ASSERT_TRUE(broke.ok()) << broke.ToString();
  ASSERT_TRUE(this->etcd().Put("m/3", "c").ok());
  ASSERT_TRUE(this->etcd().Put("m/4", "d").ok());
  auto after = this->Collect(*w, 2, milliseconds(15000));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ(after->at(0).key, "m/3");
  EXPECT_EQ(after->at(0).mod_revision, resume);
  EXPECT_EQ(after->at(1).key, "m/4");
  Result<std::vector<WatchEvent>> none = w->Next(milliseconds(300));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

TYPED_TEST_P(EtcdWatchContractTest, WatchReportsCompactionAsNotFound) {
  Result<int64_t> r1 = this->etcd().Put("m/a", "1");
  ASSERT_TRUE(r1.ok());
  Result<int64_t> r2 = this->etcd().Put("m/a", "2");
  ASSERT_TRUE(r2.ok());
  ASSERT_TRUE(this->etcd().Compact(*r2).ok());
  auto w = this->OpenWatch("m/", *r1);
  Result<std::vector<WatchEvent>> got = w->Next(milliseconds(5000));
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().IsNotFound()) << got.status().ToString();
  EXPECT_EQ(w->compact_revision(), *r2);
  EXPECT_EQ(w->next_revision(), *r1);
  EXPECT_TRUE(w->Next(milliseconds(10)).status().IsNotFound());  // final
  // From the compaction revision on, history is there.
  auto w2 = this->OpenWatch("m/", *r2);
  auto again = this->Collect(*w2, 1, milliseconds(10000));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->at(0).value, "2");
}

TYPED_TEST_P(EtcdWatchContractTest, CancelEndsAWaitingNextPromptly) {
  auto w = this->OpenWatch("m/", 0);
  ASSERT_NE(w, nullptr);
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(300));
    w->Cancel();
  });
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<WatchEvent>> got = w->Next(milliseconds(20000));
  auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable)
      << got.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(w->Next(milliseconds(10)).status().code(),
            StatusCode::kUnavailable);
  EXPECT_TRUE(this->etcd().Put("m/x", "still works").ok());
}

REGISTER_TYPED_TEST_SUITE_P(
    EtcdWatchContractTest, LeaseGrantGivesAtLeastTheTtlAskedFor,
    LeaseExpiryRemovesItsKeysOnly, KeepAliveExtendsTheLease,
    RevokeDeletesKeysAtOnceThenNotFound, WatchSeesChangesInOrder,
    WatchFromZeroSeesOnlyLaterChanges, WatchFromThePastReplaysHistory,
    WatchResumesAfterBreakWithoutLossOrRepeat, WatchReportsCompactionAsNotFound,
    CancelEndsAWaitingNextPromptly);

}  // namespace kv::cluster::testing
