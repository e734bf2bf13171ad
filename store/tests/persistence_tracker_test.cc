// The persistence tracker itself: it must be a faithful adversary.
#include "persistence_tracker.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kv::store {
namespace {

using Mode = PersistenceTracker::Mode;

TEST(PersistenceTrackerTest, PersistedLinesSurviveUnpersistedMayRevert) {
  std::vector<uint8_t> mem(4096, 0);
  PersistenceTracker t;
  t.Attach(mem.data(), mem.size());
  mem[0] = 1;    // line 0, persisted below
  mem[100] = 2;  // line 1, never persisted
  t.Persist(&mem[0], 1);
  EXPECT_EQ(t.VolatileLines(), 1u);
  std::mt19937_64 rng(1);
  auto reverted = t.CrashImage(Mode::kAllReverted, &rng);
  EXPECT_EQ(reverted[0], 1);
  EXPECT_EQ(reverted[100], 0);
  auto kept = t.CrashImage(Mode::kAllKept, &rng);
  EXPECT_EQ(kept[0], 1);
  EXPECT_EQ(kept[100], 2);
  bool saw_new = false, saw_old = false;
  for (int i = 0; i < 64; i++) {
    auto img = t.CrashImage(Mode::kRandom, &rng);
    (img[100] == 2 ? saw_new : saw_old) = true;
  }
  EXPECT_TRUE(saw_new && saw_old);
}

TEST(PersistenceTrackerTest, PersistCoversWholeCacheLines) {
  std::vector<uint8_t> mem(256, 0);
  PersistenceTracker t;
  t.Attach(mem.data(), mem.size());
  mem[64] = 1;
  mem[127] = 2;
  mem[128] = 3;
  t.Persist(&mem[70], 8);  // line 1 only
  std::mt19937_64 rng(1);
  auto img = t.CrashImage(Mode::kAllReverted, &rng);
  EXPECT_EQ(img[64], 1);
  EXPECT_EQ(img[127], 2);
  EXPECT_EQ(img[128], 0);
}

TEST(PersistenceTrackerTest, HookRunsBeforeThePersistApplies) {
  std::vector<uint8_t> mem(128, 0);
  PersistenceTracker t;
  t.Attach(mem.data(), mem.size());
  std::vector<uint64_t> points;
  std::vector<uint8_t> seen;
  std::mt19937_64 rng(1);
  t.SetHook([&](uint64_t k) {
    points.push_back(k);
    seen.push_back(t.CrashImage(Mode::kAllReverted, &rng)[0]);
  });
  mem[0] = 9;
  t.Persist(&mem[0], 1);
  t.Persist(&mem[0], 1);
  EXPECT_EQ(points, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(seen, (std::vector<uint8_t>{0, 9}));
  EXPECT_EQ(t.persist_count(), 2u);
}

TEST(PersistenceTrackerTest, PersistPairIsOnePointWithBothRangesVolatile) {
  std::vector<uint8_t> mem(4096, 0);
  PersistenceTracker t;
  t.Attach(mem.data(), mem.size());
  mem[0] = 1;
  mem[2048] = 2;
  size_t volatile_at_hook = 0;
  t.SetHook([&](uint64_t) { volatile_at_hook = t.VolatileLines(); });
  t.PersistPair(&mem[2048], 1, &mem[0], 1);
  EXPECT_EQ(t.persist_count(), 1u);
  EXPECT_EQ(volatile_at_hook, 2u);  // the hook sees both lines unpersisted
  EXPECT_EQ(t.VolatileLines(), 0u);
  std::mt19937_64 rng(3);
  auto img = t.CrashImage(Mode::kAllReverted, &rng);
  EXPECT_EQ(img[0], 1);
  EXPECT_EQ(img[2048], 2);
}

}  // namespace
}  // namespace kv::store
