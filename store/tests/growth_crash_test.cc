// Crash images at every persist point of an index growth (keyspace_grow.cc):
// zeroing the new buckets, the moved copies, the catalog entry (the commit
// point), the header, the cleared old positions. Every image must open to
// the acknowledged keys — no lost key, no stale value, no resurrected
// delete — with a clean Check, in the old geometry before the commit point
// and the grown one after.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"

namespace kv::store {
namespace {

using testing::CrashEverywhere;
using testing::CrashPoint;

constexpr int kRandomImages = 12;

class GrowthCrashTest : public testing::TrackedPoolTest {
 protected:
  // key0..key23 = "v1-<key>", acknowledged (24 keys: below the load at
  // which the 16-bucket index grows by itself).
  static void PutKeys(Writer* w, std::map<std::string, std::string>* want) {
    for (int i = 0; i < 24; i++) {
      const std::string k = "key" + std::to_string(i);
      (*want)[k] = "v1-" + k;
      ASSERT_TRUE(w->Put(k, (*want)[k]).ok());
    }
  }

  // Expects exactly `want` in the image's keyspace, and nothing to repair
  // left behind.
  static void ExpectKeys(Pool* pool, const CrashPoint& at,
                         const std::map<std::string, std::string>& want,
                         const std::string& deleted) {
    auto ks = pool->GetKeyspace("ks");
    ASSERT_TRUE(ks.ok()) << at.ToString();
    std::string v;
    for (const auto& [k, value] : want) {
      Status st = (*ks)->Get(k, &v);
      ASSERT_TRUE(st.ok()) << at.ToString() << ": " << k << ": "
                           << st.ToString();
      EXPECT_EQ(v, value) << at.ToString() << ": " << k;
    }
    EXPECT_TRUE((*ks)->Get(deleted, &v).IsNotFound()) << at.ToString();
    EXPECT_EQ((*ks)->Stats().keys, want.size()) << at.ToString();
    CheckReport r = pool->Check();
    EXPECT_TRUE(r.ok()) << at.ToString() << ": " << r.problems[0];
  }
};

TEST_F(GrowthCrashTest, EveryPersistPointOfTwoGrowthsKeepsEveryKey) {
  // TinyKeyspace: 16 buckets; 32 fit the index's first page, 64 take the
  // log's first segment.
  std::map<std::string, std::string> want;
  {
    Writer w(ks_);
    PutKeys(&w, &want);
    ASSERT_TRUE(w.Delete("key5").ok());
    want.erase("key5");
    // Updates whose old slots' clears are not yet durable when the
    // growth starts.
    for (int i = 10; i < 14; i++) {
      const std::string k = "key" + std::to_string(i);
      want[k] = "v2-" + k;
      ASSERT_TRUE(w.Put(k, want[k]).ok());
    }
  }
  const uint64_t before = ks_->Stats().index_buckets;
  ASSERT_EQ(before, 16u) << "the keyspace grew by itself; fewer keys";
  const int points = CrashEverywhere(
      tracker_.get(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        ExpectKeys(p, at, want, "key5");
        if (at.after) {
          EXPECT_EQ(p->GetKeyspace("ks").value()->Stats().index_buckets,
                    4 * before);
        }
      },
      [&] {
        ASSERT_TRUE(ks_->GrowIndex().ok());
        ASSERT_TRUE(ks_->GrowIndex().ok());
      });
  // Four a growth: new buckets with the copies, the catalog entry, the
  // header, the old positions' clears.
  EXPECT_GE(points, 8);
  // Still usable after both: new keys land in the grown index.
  Writer w(ks_);
  ASSERT_TRUE(w.Put("after", "x").ok());
  std::string v;
  EXPECT_TRUE(ks_->Get("after", &v).ok());
  EXPECT_TRUE(pool_->Check().ok());
}

// Commits right after a growth clear slots in the grown index; a crash
// then must not bring back a moved slot's old copy over them.
TEST_F(GrowthCrashTest, UpdatesAfterAGrowthAreNotUndoneByItsLeftovers) {
  std::map<std::string, std::string> want;
  Writer w(ks_);
  PutKeys(&w, &want);
  ASSERT_TRUE(ks_->GrowIndex().ok());
  CrashEverywhere(
      tracker_.get(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        auto ks = p->GetKeyspace("ks").value();
        std::string v;
        for (int i = 0; i < 24; i++) {
          const std::string k = "key" + std::to_string(i);
          ASSERT_TRUE(ks->Get(k, &v).ok()) << at.ToString() << " " << k;
          if (at.after) EXPECT_EQ(v, "v2-" + k) << at.ToString();
          if (!at.after) EXPECT_TRUE(v == "v1-" + k || v == "v2-" + k);
        }
        EXPECT_EQ(ks->Stats().keys, 24u) << at.ToString();
        EXPECT_TRUE(p->Check().ok()) << at.ToString();
      },
      [&] {
        for (int i = 0; i < 24; i++) {
          const std::string k = "key" + std::to_string(i);
          ASSERT_TRUE(w.Put(k, "v2-" + k).ok());
        }
      });
}

}  // namespace
}  // namespace kv::store
