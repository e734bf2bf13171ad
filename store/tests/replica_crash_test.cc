// Crash tests of replica commits (CommitRequest::replica, what a shard
// move's target and later a backup apply): at every persist point of an
// applied copy, in many crash images, the key reads as before or after the
// copy — never a torn record, never an older version back — and a local
// write after the reopen is newer than every copy that survived (the
// copy's sequence epoch is durable before the copy can be).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace rf = kv::record_format;
constexpr int kImagesPerPoint = 48;
constexpr uint64_t kHighEpochSequence =
    (uint64_t{12} << Keyspace::kEpochShift) + 5;

class ReplicaCrashTest : public testing::TrackedPoolTest {
 protected:
  void SetUp() override {
    TrackedPoolTest::SetUp();
    grant_ = ks_->GrantSegment().value();
  }

  // Copies a committed record to the grant's tail and applies it.
  CommitResult ApplyCopy(const std::string& key, const std::string& value,
                         uint64_t sequence, bool tombstone = false) {
    uint8_t* dst = ks_->log_base() + grant_.log_offset + grant_.start;
    const size_t n =
        rf::EncodeRecord(dst, ks_->id(), sequence, tombstone, key, value);
    CommitRequest r;
    r.segment = grant_.segment;
    r.grant_id = grant_.grant_id;
    r.offset = grant_.start;
    r.length = static_cast<uint32_t>(n);
    r.key_hash = index_format::HashKey(key);
    r.replica = true;
    grant_.start += n;
    Result<CommitResult> res = ks_->Commit(r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : CommitResult{};
  }

  // At every persist point of op: `key` reads one of `allowed` ("" =
  // absent), `after` once op returned; whatever version survived, a
  // local put after the reopen gets a higher sequence. Returns the number
  // of persist points.
  int CrashDuring(const std::string& key, const std::set<std::string>& allowed,
                  const std::string& after, const std::function<void()>& op) {
    const int points = testing::CrashEverywhere(
        tracker_.get(), kImagesPerPoint - 2,
        [&](Pool* pool, const testing::CrashPoint& at) {
          ASSERT_TRUE(pool->Check().ok()) << at.ToString();
          auto ks = pool->GetKeyspace("ks").value();
          std::string got;
          Version v;
          Status st = ks->Get(key, &got, &v);
          ASSERT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
          if (st.IsNotFound()) got = "";
          ASSERT_TRUE(at.after ? got == after : allowed.count(got) == 1)
              << at.ToString() << ": '" << key << "' reads '"
              << got.substr(0, 20) << "'";
          if (got.empty()) return;
          Writer w(ks);
          ASSERT_TRUE(w.Put(key, "local").ok()) << at.ToString();
          Version mine;
          ASSERT_TRUE(ks->Get(key, &got, &mine).ok());
          ASSERT_EQ(got, "local") << at.ToString();
          ASSERT_GT(mine.sequence, v.sequence)
              << at.ToString() << ": a local write is older than a copy";
        },
        op);
    return points;
  }

  SegmentGrant grant_;
};

TEST_F(ReplicaCrashTest, AnInsertedCopyIsAbsentOrWhole) {
  const std::string value(600, 'c');
  EXPECT_GT(CrashDuring("key", {"", value}, value,
                        [&] { ApplyCopy("key", value, kHighEpochSequence); }),
            0);
}

TEST_F(ReplicaCrashTest, AnUpdateByCopyShowsOldOrNew) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "old").ok());
  EXPECT_GT(CrashDuring("key", {"old", "new"}, "new",
                        [&] { ApplyCopy("key", "new", kHighEpochSequence); }),
            0);
}

TEST_F(ReplicaCrashTest, ADeleteByCopyShowsTheKeyOrNothing) {
  ApplyCopy("key", "v", kHighEpochSequence);
  EXPECT_GT(
      CrashDuring("key", {"v", ""}, "",
                  [&] { ApplyCopy("key", "", kHighEpochSequence + 1, true); }),
      0);
}

// A stale copy changes nothing at any point (its bytes are unsealed, never
// persisted as a version).
TEST_F(ReplicaCrashTest, AStaleCopyNeverShows) {
  ApplyCopy("key", "newer", kHighEpochSequence + 10);
  const int points = CrashDuring("key", {"newer"}, "newer", [&] {
    EXPECT_TRUE(ApplyCopy("key", "older", kHighEpochSequence).stale);
  });
  EXPECT_EQ(points, 0) << "a stale copy persisted something";
}

// Full home buckets: the copy replaces its key's slot in place (the
// ordered path), not an empty slot.
TEST_F(ReplicaCrashTest, AnInPlaceReplacementByCopyShowsOldOrNew) {
  testing::RefuseIndexGrowth(ks_.get());
  const std::vector<std::string> keys = testing::KeysWithHome(
      5, index_format::kProbeBuckets * index_format::kSlotsPerBucket);
  Writer w(ks_);
  for (const auto& k : keys) ASSERT_TRUE(w.Put(k, "v1").ok());
  const std::string& key = keys.front();
  EXPECT_GT(CrashDuring(key, {"v1", "copy"}, "copy",
                        [&] { ApplyCopy(key, "copy", kHighEpochSequence); }),
            0);
}

}  // namespace
}  // namespace kv::store
