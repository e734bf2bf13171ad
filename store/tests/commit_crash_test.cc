// Targeted crash tests of the one-persist commit: the interleavings the
// random workloads of crash_test.cc reach only rarely.
//
// Each test drives a fixed sequence on a tracked pool, and at every persist
// point of the operation under test builds many random crash images (each
// unpersisted cache line kept or reverted), reopens them and checks the
// key against what was acknowledged.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace ix = index_format;
using testing::KeysWithHome;
using testing::NoGrace;
using testing::TinyKeyspace;
constexpr int kImagesPerPoint = 64;

class CommitCrashTest : public testing::TrackedPoolTest {
 protected:
  // Runs op; at each of its persist points checks that the key reads as
  // one of `allowed` ("" = absent) in every crash image, and after it
  // returns that it reads `after` (also when every unpersisted line is
  // lost).
  void CrashDuring(const std::string& key, const std::set<std::string>& allowed,
                   const std::string& after, const std::function<void()>& op) {
    const int points = testing::CrashEverywhere(
        tracker_.get(), kImagesPerPoint - 2,
        [&](Pool* pool, const testing::CrashPoint& at) {
          ASSERT_TRUE(pool->Check().ok()) << at.ToString();
          std::string got;
          Status st = pool->GetKeyspace("ks").value()->Get(key, &got);
          ASSERT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
          if (st.IsNotFound()) got = "";
          ASSERT_TRUE(at.after ? got == after : allowed.count(got) == 1)
              << at.ToString() << ": '" << key << "' reads '"
              << got.substr(0, 20) << "'";
        },
        op);
    EXPECT_GT(points, 0);
  }
};

// The update's new slot lands in the next bucket (the home bucket is full),
// so the old slot's unpersisted clear is in another cache line than the
// delete's clear. The delete must not let the old version come back.
TEST_F(CommitCrashTest, DeleteAfterUpdateNeverRevivesTheOldVersion) {
  const std::vector<std::string> keys = KeysWithHome(3, 8);
  Writer w(ks_);
  for (const auto& k : keys) ASSERT_TRUE(w.Put(k, "v1-" + k).ok());
  const std::string& key = keys.back();  // the home bucket's last slot
  ASSERT_TRUE(w.Put(key, "v2").ok());    // new slot in bucket 4
  CrashDuring(key, {"v2", ""}, "", [&] { ASSERT_TRUE(w.Delete(key).ok()); });
  std::string got;
  EXPECT_TRUE(ks_->Get(key, &got).IsNotFound());
}

// A put in flight: the old version or the new one, never a torn record or
// nothing.
TEST_F(CommitCrashTest, UpdateInFlightShowsOldOrNew) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "old").ok());
  CrashDuring("key", {"old", std::string(700, 'n')}, std::string(700, 'n'),
              [&] { ASSERT_TRUE(w.Put("key", std::string(700, 'n')).ok()); });
}

// An insert in flight whose record spans many cache lines: absent or whole.
TEST_F(CommitCrashTest, InsertInFlightShowsNothingOrAll) {
  Writer w(ks_);
  CrashDuring("fresh", {"", std::string(900, 'x')}, std::string(900, 'x'),
              [&] { ASSERT_TRUE(w.Put("fresh", std::string(900, 'x')).ok()); });
}

// A put costs one persist point (record and slot together); the first put
// of a writer also takes a segment (index persist, zeroing).
TEST_F(CommitCrashTest, APutIsOnePersistPoint) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("a", "1").ok());
  const uint64_t before = tracker_->persist_count();
  ASSERT_TRUE(w.Put("a", "2").ok());
  ASSERT_TRUE(w.Put("b", "3").ok());
  EXPECT_EQ(tracker_->persist_count() - before, 2u);
}

// Two writers race on the same few keys (puts, updates, deletes; shared
// buckets, concurrent pending clears, superseded commits). Afterwards a
// power failure loses everything not explicitly persisted — notably the
// old slots updates cleared — and the reopened pool must show exactly what
// the live one showed.
TEST_F(CommitCrashTest, RacingWritersLoseNothingAcknowledged) {
  constexpr int kKeys = 12;
  constexpr int kOpsPerThread = 400;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; t++) {
    threads.emplace_back([this, t] {
      Writer w(ks_);
      std::mt19937_64 rng(100 + t);
      for (int i = 0; i < kOpsPerThread; i++) {
        const std::string key = "key" + std::to_string(rng() % kKeys);
        auto r = rng() % 8 == 0 ? w.Delete(key)
                                : w.Put(key, "t" + std::to_string(t) + "-" +
                                                 std::to_string(i) +
                                                 std::string(i % 90, 'v'));
        if (!r.ok() && !r.status().IsNoSpace()) {
          ADD_FAILURE() << r.status().ToString();
          return;
        }
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
  std::mt19937_64 rng(7);
  auto image =
      tracker_->CrashImage(PersistenceTracker::Mode::kAllReverted, &rng);
  auto pool = Pool::OpenOn(MemoryMapping::FromImage(image, nullptr), NoGrace());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  // Lost clears left keys in two slots; recovery repaired them.
  EXPECT_FALSE((*pool)->Info().recovery_notes.empty());
  EXPECT_TRUE((*pool)->Check().ok());
  auto ks = (*pool)->GetKeyspace("ks").value();
  for (int k = 0; k < kKeys; k++) {
    const std::string key = "key" + std::to_string(k);
    std::string v;
    const bool have = ks->Get(key, &v).ok();
    ASSERT_EQ(have, live.count(key) == 1) << key;
    if (have) {
      EXPECT_EQ(v, live[key]) << key;
    }
  }
  EXPECT_EQ(ks->Stats().keys, live.size());
}

}  // namespace
}  // namespace kv::store
