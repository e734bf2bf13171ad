// What only FakeEtcd has: its test controls.
#include "kv/cluster/fake_etcd.h"

#include <gtest/gtest.h>

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;

TEST(FakeEtcdTest, LeaseExpiresExactlyAtItsDeadline) {
  FakeEtcd fake;
  Result<Lease> l = fake.LeaseGrant(5);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(fake.Put("k", "v", l->id).ok());
  const int64_t before = fake.revision();
  fake.AdvanceClock(milliseconds(4999));
  EXPECT_EQ(fake.Get("k")->kvs.size(), 1u);
  EXPECT_EQ(fake.revision(), before);
  fake.AdvanceClock(milliseconds(1));
  EXPECT_TRUE(fake.Get("k")->kvs.empty());
  EXPECT_EQ(fake.revision(), before + 1);
}

TEST(FakeEtcdTest, ShortTtlIsRaisedToTheMinimum) {
  FakeEtcd fake(FakeEtcd::Options{.min_lease_ttl_s = 3});
  Result<Lease> l = fake.LeaseGrant(1);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ttl_s, 3);
}

TEST(FakeEtcdTest, UnavailableRefusesEverythingAndChangesNothing) {
  FakeEtcd fake;
  ASSERT_TRUE(fake.Put("k", "v").ok());
  auto w = fake.Watch("", fake.revision() + 1);
  ASSERT_TRUE(w.ok());
  fake.SetUnavailable(true);
  const int64_t before = fake.revision();
  EXPECT_EQ(fake.Get("k").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.Put("k", "x").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.Delete("k").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.Txn({}, {}, {}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.LeaseGrant(5).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.Compact(1).code(), StatusCode::kUnavailable);
  EXPECT_EQ((*w)->Next(milliseconds(50)).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(fake.revision(), before);
  fake.SetUnavailable(false);
  ASSERT_TRUE(fake.Put("k", "y").ok());
  Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(1000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ(got->at(0).value, "y");
}

// A live stream is not cut by a compaction past its resume point; a
// reconnect from there is (etcd checks compaction when a watch starts).
TEST(FakeEtcdTest, CompactionHitsAWatchOnlyWhenItReconnects) {
  FakeEtcd fake;
  auto w = fake.Watch("m/", 0);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Next(milliseconds(1))->empty());  // established
  const int64_t resume = (*w)->next_revision();
  ASSERT_TRUE(fake.Put("other/1", "x").ok());
  ASSERT_TRUE(fake.Put("other/2", "x").ok());
  ASSERT_TRUE(fake.Compact(fake.revision()).ok());
  EXPECT_TRUE((*w)->Next(milliseconds(1)).ok());
  fake.BreakWatchStreams();
  Result<std::vector<WatchEvent>> got = (*w)->Next(milliseconds(1));
  EXPECT_TRUE(got.status().IsNotFound()) << got.status().ToString();
  EXPECT_EQ((*w)->next_revision(), resume);
  EXPECT_EQ((*w)->compact_revision(), fake.revision());
}

}  // namespace
}  // namespace kv::cluster
