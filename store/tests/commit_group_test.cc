// Group commit (commit_group.h): one persist point for many puts, nothing
// durable before Finish(), each key old-or-new across a crash in Finish(),
// and the paths that must finish the group first.
#include "kv/store/commit_group.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "crash_util.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::KeysWithHome;
using testing::NoGrace;
using Mode = PersistenceTracker::Mode;

class CommitGroupTest : public testing::TrackedPoolTest {
 protected:
  void SetUp() override {
    TrackedPoolTest::SetUp();
    // One key per home bucket (= per stripe in a 16-bucket index).
    for (uint64_t h = 0; h < 8; h++) keys_.push_back(KeysWithHome(h, 1)[0]);
  }

  // What `key` reads in the image a power failure leaves now ("" absent).
  std::string AfterCrash(const std::string& key, Mode mode) {
    std::mt19937_64 rng(1);
    auto pool = Pool::OpenOn(
        MemoryMapping::FromImage(tracker_->CrashImage(mode, &rng), nullptr),
        NoGrace());
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    if (!pool.ok()) return "<open failed>";
    EXPECT_TRUE((*pool)->Check().ok());
    std::string v;
    Status st = (*pool)->GetKeyspace("ks").value()->Get(key, &v);
    EXPECT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
    return st.ok() ? v : "";
  }

  std::vector<std::string> keys_;
};

TEST_F(CommitGroupTest, PutsOfDistinctKeysShareOnePersistPoint) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  ASSERT_TRUE(w.Put("warm", "up").ok());  // takes the segment
  group.Finish();
  const uint64_t before = tracker_->persist_count();
  for (const auto& k : keys_) ASSERT_TRUE(w.Put(k, "v-" + k).ok());
  EXPECT_EQ(group.pending(), keys_.size());
  EXPECT_EQ(tracker_->persist_count(), before);  // nothing persisted yet
  group.Finish();
  EXPECT_EQ(group.pending(), 0u);
  EXPECT_EQ(tracker_->persist_count() - before, 1u);
  for (const auto& k : keys_) {
    EXPECT_EQ(AfterCrash(k, Mode::kAllReverted), "v-" + k) << k;
  }
}

TEST_F(CommitGroupTest, AddedPutsAreVisibleAtOnceButDurableOnlyAfterFinish) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  ASSERT_TRUE(w.Put(keys_[0], "old").ok());
  group.Finish();
  ASSERT_TRUE(w.Put(keys_[0], "new").ok());
  ASSERT_TRUE(w.Put(keys_[1], "fresh").ok());
  std::string v;
  ASSERT_TRUE(ks_->Get(keys_[0], &v).ok());
  EXPECT_EQ(v, "new");
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "old");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "");
  group.Finish();
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "new");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "fresh");
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());  // the old slot was cleared
}

// A crash anywhere in Finish(): every key of the group reads its old
// version or its new one, never nothing or a torn record.
TEST_F(CommitGroupTest, ACrashInFinishLeavesEachKeyOldOrNew) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  for (const auto& k : keys_) ASSERT_TRUE(w.Put(k, "old-" + k).ok());
  group.Finish();
  for (const auto& k : keys_) {
    ASSERT_TRUE(w.Put(k, "new-" + k + std::string(300, 'n')).ok());
  }
  const int points = testing::CrashEverywhere(
      tracker_.get(), 62,
      [&](Pool* pool, const testing::CrashPoint& at) {
        ASSERT_TRUE(pool->Check().ok()) << at.ToString();
        auto ks = pool->GetKeyspace("ks").value();
        for (const auto& k : keys_) {
          std::string v;
          ASSERT_TRUE(ks->Get(k, &v).ok()) << at.ToString() << " " << k;
          const std::string fresh = "new-" + k + std::string(300, 'n');
          ASSERT_TRUE(at.after ? v == fresh : v == fresh || v == "old-" + k)
              << at.ToString() << ": " << k << " reads " << v.substr(0, 12);
        }
      },
      [&] { group.Finish(); });
  EXPECT_EQ(points, 1);  // the group's one persist point
}

// The same key twice: the first put reaches its commit point before the
// second is applied (a key never has two pending versions).
TEST_F(CommitGroupTest, TheSameKeyTwiceFinishesTheFirstPut) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  ASSERT_TRUE(w.Put(keys_[0], "a").ok());
  ASSERT_TRUE(w.Put(keys_[1], "b").ok());
  EXPECT_EQ(group.pending(), 2u);
  ASSERT_TRUE(w.Put(keys_[0], "a2").ok());
  EXPECT_EQ(group.pending(), 1u);
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "a");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "b");
  group.Finish();
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "a2");
  std::string v;
  ASSERT_TRUE(ks_->Get(keys_[0], &v).ok());
  EXPECT_EQ(v, "a2");
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(ks_->Stats().keys, 2u);
}

// A delete has ordered persist points of its own: the group is finished
// first, so the puts before it are durable when the delete returns.
TEST_F(CommitGroupTest, ADeleteFinishesTheGroupFirst) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  ASSERT_TRUE(w.Put(keys_[0], "x").ok());
  ASSERT_TRUE(w.Put(keys_[1], "y").ok());
  group.Finish();
  ASSERT_TRUE(w.Put(keys_[1], "y2").ok());
  ASSERT_TRUE(w.Delete(keys_[0]).ok());
  EXPECT_EQ(group.pending(), 0u);
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "y2");
}

TEST_F(CommitGroupTest, ConditionsSeeThePendingPut) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  ASSERT_TRUE(w.Put(keys_[0], "one", Condition::kIfAbsent).ok());
  auto again = w.Put(keys_[0], "two", Condition::kIfAbsent);
  EXPECT_TRUE(again.status().IsConditionFailed()) << again.status().ToString();
  group.Finish();
  std::string v;
  ASSERT_TRUE(ks_->Get(keys_[0], &v).ok());
  EXPECT_EQ(v, "one");
}

// A full segment is sealed only after the group's puts in it are durable.
TEST_F(CommitGroupTest, ASegmentIsSealedOnlyAfterItsPutsAreDurable) {
  CommitGroup group(ks_.get());
  Writer w(ks_, &group);
  const std::string value(900, 'v');  // ~9 records per 8 KiB segment
  size_t max_pending = 0;
  for (int i = 0; i < 30; i++) {
    ASSERT_TRUE(
        w.Put(keys_[i % keys_.size()] + "-" + std::to_string(i), value).ok());
    max_pending = std::max(max_pending, group.pending());
  }
  group.Finish();
  EXPECT_LE(max_pending, 9u);
  for (int i = 0; i < 30; i++) {
    EXPECT_EQ(AfterCrash(keys_[i % keys_.size()] + "-" + std::to_string(i),
                         Mode::kAllReverted),
              value);
  }
}

// Two writers, each with its own group, on the same few keys: no
// deadlock, and after the last Finish() a power failure that loses
// everything unpersisted shows exactly what the live pool showed.
TEST_F(CommitGroupTest, TwoGroupsOnSharedKeysLoseNothingFinished) {
  constexpr int kKeys = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([this, t] {
      CommitGroup group(ks_.get());
      Writer w(ks_, &group);
      std::mt19937_64 rng(200 + t);
      for (int i = 0; i < 600; i++) {
        const std::string key = "key" + std::to_string(rng() % kKeys);
        auto r = rng() % 8 == 0 ? w.Delete(key)
                                : w.Put(key, "t" + std::to_string(t) + "-" +
                                                 std::to_string(i) +
                                                 std::string(i % 70, 'v'));
        if (!r.ok() && !r.status().IsNoSpace()) {
          ADD_FAILURE() << r.status().ToString();
          return;
        }
        if (r.status().IsNoSpace()) {
          group.Finish();
          (void)ks_->Clean(1.0);
        }
        if (rng() % 4 == 0) group.Finish();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::map<std::string, std::string> live;
  for (int k = 0; k < kKeys; k++) {
    std::string v;
    const std::string key = "key" + std::to_string(k);
    if (ks_->Get(key, &v).ok()) live[key] = v;
  }
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());
  for (int k = 0; k < kKeys; k++) {
    const std::string key = "key" + std::to_string(k);
    const auto it = live.find(key);
    EXPECT_EQ(AfterCrash(key, Mode::kAllReverted),
              it == live.end() ? "" : it->second)
        << key;
  }
}

}  // namespace
}  // namespace kv::store
