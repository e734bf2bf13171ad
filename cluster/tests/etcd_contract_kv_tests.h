// The Etcd contract, keys and transactions (see etcd_contract_test.h).
// Include once, from an instantiating .cc.
#include <atomic>
#include <thread>

#include "etcd_contract_test.h"

namespace kv::cluster::testing {

TYPED_TEST_SUITE_P(EtcdKvContractTest);

TYPED_TEST_P(EtcdKvContractTest, GetOfAbsentKeyIsEmptyWithRevision) {
  Result<Range> r = this->etcd().Get("nope");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->kvs.empty());
  EXPECT_GE(r->revision, 1);
}

TYPED_TEST_P(EtcdKvContractTest, PutThenGetGivesValueAndRevisions) {
  Result<int64_t> r1 = this->etcd().Put("k", "v1");
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  Result<int64_t> r2 = this->etcd().Put("k", "v2");
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(*r2, *r1 + 1);
  Result<Range> g = this->etcd().Get("k");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->kvs.size(), 1u);
  EXPECT_EQ(g->kvs[0].key, "k");
  EXPECT_EQ(g->kvs[0].value, "v2");
  EXPECT_EQ(g->kvs[0].create_revision, *r1);
  EXPECT_EQ(g->kvs[0].mod_revision, *r2);
  EXPECT_EQ(g->kvs[0].lease, 0);
  EXPECT_EQ(g->revision, *r2);
}

TYPED_TEST_P(EtcdKvContractTest, BinaryKeysAndValuesRoundTrip) {
  std::string key("k\0\xff\x80", 4), value;
  for (int i = 0; i < 256; ++i) value += static_cast<char>(i);
  ASSERT_TRUE(this->etcd().Put(key, value).ok());
  ASSERT_TRUE(this->etcd().Put("empty", "").ok());
  EXPECT_EQ(this->ValueOf(key), value);
  EXPECT_EQ(this->ValueOf("empty"), "");
}

TYPED_TEST_P(EtcdKvContractTest, GetPrefixReturnsSortedKeysUnderPrefixOnly) {
  for (const char* k : {"a/2", "a/1", "a0", "a", "b/1"}) {
    ASSERT_TRUE(this->etcd().Put(k, std::string("v") + k).ok());
  }
  std::string high("p\xff", 2);
  ASSERT_TRUE(this->etcd().Put(high + "x", "h").ok());
  ASSERT_TRUE(this->etcd().Put("q", "q").ok());
  Result<Range> r = this->etcd().GetPrefix("a/");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kvs.size(), 2u);
  EXPECT_EQ(r->kvs[0].key, "a/1");
  EXPECT_EQ(r->kvs[0].value, "va/1");
  EXPECT_EQ(r->kvs[1].key, "a/2");
  Result<Range> h = this->etcd().GetPrefix(high);  // range end "q"
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->kvs.size(), 1u);
  EXPECT_EQ(h->kvs[0].key, high + "x");
  Result<Range> all = this->etcd().GetPrefix("");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->kvs.size(), 7u);
  Result<Range> none = this->etcd().GetPrefix("zz");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->kvs.empty());
  EXPECT_EQ(none->revision, all->revision);
}

TYPED_TEST_P(EtcdKvContractTest, BadArgumentsAreInvalidAndChangeNothing) {
  ASSERT_TRUE(this->etcd().Put("k", "v").ok());
  const int64_t before = this->Revision();
  EXPECT_TRUE(this->etcd().Get("").status().IsInvalidArgument());
  EXPECT_TRUE(this->etcd().Put("", "v").status().IsInvalidArgument());
  EXPECT_TRUE(this->etcd().Put("k", "x", -1).status().IsInvalidArgument());
  EXPECT_TRUE(this->etcd().Delete("").status().IsInvalidArgument());
  EXPECT_TRUE(this->etcd()
                  .Txn({Compare::Absent("")}, {TxnOp::Put("k", "x")}, {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(this->etcd()
                  .Txn({}, {TxnOp::Put("k", "x"), TxnOp::Delete("k")}, {})
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(this->etcd().Compact(0).IsInvalidArgument());
  EXPECT_TRUE(this->etcd().Watch("k", -1).status().IsInvalidArgument());
  EXPECT_EQ(this->Revision(), before);
  EXPECT_EQ(this->ValueOf("k"), "v");
}

TYPED_TEST_P(EtcdKvContractTest,
             DeleteRemovesKeyAndAbsentDeleteChangesNothing) {
  Result<int64_t> put = this->etcd().Put("k", "v");
  ASSERT_TRUE(put.ok());
  Result<DeleteResult> d = this->etcd().Delete("k");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->deleted);
  EXPECT_EQ(d->revision, *put + 1);
  EXPECT_EQ(this->ValueOf("k"), "<absent>");
  Result<DeleteResult> again = this->etcd().Delete("k");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->deleted);
  EXPECT_EQ(again->revision, d->revision);
}

TYPED_TEST_P(EtcdKvContractTest, TxnGuardedByTheSeenRevisionApplies) {
  Result<int64_t> seen = this->etcd().Put("map", "v1");
  ASSERT_TRUE(seen.ok());
  Result<TxnResult> t =
      this->etcd().Txn({Compare::ModRevisionIs("map", *seen)},
                       {TxnOp::Put("map", "v2"), TxnOp::Put("epoch", "2")}, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->succeeded);
  EXPECT_EQ(t->revision, *seen + 1);  // both puts at one revision
  Result<Range> m = this->etcd().Get("map");
  Result<Range> e = this->etcd().Get("epoch");
  ASSERT_TRUE(m.ok() && e.ok());
  EXPECT_EQ(m->kvs.at(0).value, "v2");
  EXPECT_EQ(m->kvs.at(0).mod_revision, t->revision);
  EXPECT_EQ(e->kvs.at(0).mod_revision, t->revision);
}

// The rule every map change relies on: a writer that saw an older
// revision cannot overwrite a newer change.
TYPED_TEST_P(EtcdKvContractTest, TxnGuardedByAStaleRevisionFails) {
  Result<int64_t> seen = this->etcd().Put("map", "v1");
  ASSERT_TRUE(seen.ok());
  Result<int64_t> other = this->etcd().Put("map", "theirs");  // meanwhile
  ASSERT_TRUE(other.ok());
  Result<TxnResult> t =
      this->etcd().Txn({Compare::ModRevisionIs("map", *seen)},
                       {TxnOp::Put("map", "mine")}, {TxnOp::Put("lost", "1")});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->succeeded);
  EXPECT_EQ(this->ValueOf("map"), "theirs");
  EXPECT_EQ(this->ValueOf("lost"), "1");  // the failure branch ran
  EXPECT_EQ(t->revision, *other + 1);
  // A guard on a revision the key never had, and one from the future.
  for (int64_t r : {*seen + 100, int64_t{0}}) {
    Result<TxnResult> u = this->etcd().Txn({Compare::ModRevisionIs("map", r)},
                                           {TxnOp::Put("map", "mine")}, {});
    ASSERT_TRUE(u.ok());
    EXPECT_FALSE(u->succeeded) << r;
  }
  EXPECT_EQ(this->ValueOf("map"), "theirs");
}

TYPED_TEST_P(EtcdKvContractTest, TxnAbsentGuardCreatesOnce) {
  auto create = [&](const char* v) {
    return this->etcd().Txn({Compare::Absent("owner")},
                            {TxnOp::Put("owner", v)}, {});
  };
  Result<TxnResult> first = create("a");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->succeeded);
  Result<TxnResult> second = create("b");
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->succeeded);
  EXPECT_EQ(second->revision, first->revision);  // nothing ran
  EXPECT_EQ(this->ValueOf("owner"), "a");
}

TYPED_TEST_P(EtcdKvContractTest, TxnValueCompareAndDeleteBranch) {
  ASSERT_TRUE(this->etcd().Put("k", "x").ok());
  Result<TxnResult> no =
      this->etcd().Txn({Compare::ValueIs("k", "y")}, {TxnOp::Delete("k")}, {});
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->succeeded);
  EXPECT_EQ(this->ValueOf("k"), "x");
  Result<TxnResult> absent = this->etcd().Txn({Compare::ValueIs("gone", "")},
                                              {TxnOp::Put("gone", "1")}, {});
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->succeeded);  // an absent key has no value
  Result<TxnResult> yes =
      this->etcd().Txn({Compare::ValueIs("k", "x")}, {TxnOp::Delete("k")}, {});
  ASSERT_TRUE(yes.ok());
  EXPECT_TRUE(yes->succeeded);
  EXPECT_EQ(this->ValueOf("k"), "<absent>");
}

TYPED_TEST_P(EtcdKvContractTest, TxnPutWithAMissingLeaseIsNotFound) {
  ASSERT_TRUE(this->etcd().Put("k", "v").ok());
  const int64_t before = this->Revision();
  Result<TxnResult> t = this->etcd().Txn(
      {}, {TxnOp::Put("a", "1"), TxnOp::Put("k", "x", 12345)}, {});
  EXPECT_TRUE(t.status().IsNotFound()) << t.status().ToString();
  EXPECT_EQ(this->Revision(), before);  // not even the first put
  EXPECT_EQ(this->ValueOf("a"), "<absent>");
  EXPECT_EQ(this->ValueOf("k"), "v");
  // Only the branch that runs is checked.
  Result<TxnResult> other = this->etcd().Txn({}, {TxnOp::Put("a", "1")},
                                             {TxnOp::Put("k", "x", 12345)});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_TRUE(other->succeeded);
}

TYPED_TEST_P(EtcdKvContractTest, RacingGuardedWritersOnlyOneWins) {
  Result<int64_t> seen = this->etcd().Put("map", "v0");
  ASSERT_TRUE(seen.ok());
  std::atomic<int> wins{0}, errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      Result<TxnResult> t =
          this->etcd().Txn({Compare::ModRevisionIs("map", *seen)},
                           {TxnOp::Put("map", "w" + std::to_string(i))}, {});
      if (!t.ok()) ++errors;
      if (t.ok() && t->succeeded) ++wins;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(this->Revision(), *seen + 1);
}

TYPED_TEST_P(EtcdKvContractTest, CompactErrors) {
  Result<int64_t> r = this->etcd().Put("k", "1");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(this->etcd().Compact(*r + 10).IsInvalidArgument());
  Status ok = this->etcd().Compact(*r);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  EXPECT_TRUE(this->etcd().Compact(*r).IsNotFound());
  EXPECT_EQ(this->ValueOf("k"), "1");  // the current state stays
}

REGISTER_TYPED_TEST_SUITE_P(
    EtcdKvContractTest, GetOfAbsentKeyIsEmptyWithRevision,
    PutThenGetGivesValueAndRevisions, BinaryKeysAndValuesRoundTrip,
    GetPrefixReturnsSortedKeysUnderPrefixOnly,
    BadArgumentsAreInvalidAndChangeNothing,
    DeleteRemovesKeyAndAbsentDeleteChangesNothing,
    TxnGuardedByTheSeenRevisionApplies, TxnGuardedByAStaleRevisionFails,
    TxnAbsentGuardCreatesOnce, TxnValueCompareAndDeleteBranch,
    TxnPutWithAMissingLeaseIsNotFound, RacingGuardedWritersOnlyOneWins,
    CompactErrors);

}  // namespace kv::cluster::testing
