// The cleaner: compaction, grace period, a full keyspace.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::NoGrace;
using testing::SmallKeyspace;

std::unique_ptr<Pool> MemPool(const PoolOptions& o) {
  auto pool = Pool::CreateOn(MemoryMapping::Zeroed(4 << 20, nullptr), o);
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(*pool);
}

TEST(CleanerTest, CompactsSegmentsAndKeepsValues) {
  auto pool = MemPool(NoGrace());
  auto ks = pool->CreateKeyspace("ks", SmallKeyspace()).value();
  std::map<std::string, std::string> want;
  {
    Writer w(ks);
    // Overwrite a small key set many times: most of the log becomes dead.
    for (int round = 0; round < 20; round++) {
      for (int i = 0; i < 30; i++) {
        const std::string k = "k" + std::to_string(i);
        want[k] = std::string(200, static_cast<char>('a' + round));
        ASSERT_TRUE(w.Put(k, want[k]).ok());
      }
    }
  }
  KeyspaceStats before = ks->Stats();
  ASSERT_GT(before.dead_bytes, before.live_bytes);
  auto cleaned = ks->Clean(0.5, 64);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  EXPECT_GT(*cleaned, 0u);
  KeyspaceStats after = ks->Stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_LT(after.dead_bytes, before.dead_bytes);
  EXPECT_GT(after.free_segments, before.free_segments);
  for (const auto& [k, v] : want) {
    std::string got;
    ASSERT_TRUE(ks->Get(k, &got).ok()) << k;
    EXPECT_EQ(got, v);
  }
  EXPECT_TRUE(pool->Check().ok());
}

TEST(CleanerTest, FreedSegmentsWaitOutTheGracePeriod) {
  PoolOptions o;
  o.grace_period = std::chrono::milliseconds(300);
  auto pool = MemPool(o);
  auto ks = pool->CreateKeyspace("ks", SmallKeyspace()).value();
  {
    Writer w(ks);
    for (int i = 0; i < 200; i++)
      ASSERT_TRUE(w.Put("same", std::string(300, 'x')).ok());
  }
  KeyspaceStats s = ks->Stats();
  EXPECT_GT(s.quarantined_segments, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  KeyspaceStats later = ks->Stats();
  EXPECT_EQ(later.quarantined_segments, 0u);
  EXPECT_GT(later.free_segments, s.free_segments);
}

TEST(CleanerTest, FullKeyspaceIsNoSpaceAndStaysConsistent) {
  auto pool = MemPool(NoGrace());
  auto ks = pool->CreateKeyspace("ks", SmallKeyspace(64 * 1024)).value();
  Writer w(ks);
  std::map<std::string, std::string> want;
  Status st;
  int i = 0;
  for (; i < 10000; i++) {
    const std::string k = "key" + std::to_string(i);
    Result<CommitResult> r = w.Put(k, std::string(500, 'v'));
    if (!r.ok()) {
      st = r.status();
      break;
    }
    want[k] = std::string(500, 'v');
  }
  EXPECT_TRUE(st.IsNoSpace()) << st.ToString();
  EXPECT_TRUE(pool->Check().ok());
  for (const auto& [k, v] : want) {
    std::string got;
    ASSERT_TRUE(ks->Get(k, &got).ok()) << k;
  }
  // Deleting makes room again: the cleaner runs when the log is full.
  for (int j = 0; j < i; j += 2)
    ASSERT_TRUE(w.Delete("key" + std::to_string(j)).ok());
  Result<CommitResult> r = Status::NoSpace("");
  for (int attempt = 0; attempt < 3 && !r.ok(); attempt++) {
    r = w.Put("after", "delete");
  }
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(pool->Check().ok());
}

// Deterministic: a sealed segment that is mostly dead exists before the
// threads start (cold keys, partly overwritten, never touched again), so
// the cleaner's first pass has a victim whatever the interleaving; the
// writers keep writing until the cleaner has cleaned at least once, so it
// ran while they did. (It used to rely on the writers leaving a victim at
// the right moment and failed ~4 times in 30.)
TEST(CleanerTest, RunsConcurrentlyWithWritersAndReaders) {
  PoolOptions o;
  o.grace_period = std::chrono::milliseconds(2);
  auto pool = MemPool(o);
  auto ks = pool->CreateKeyspace("ks", SmallKeyspace(512 * 1024)).value();
  constexpr int kKeys = 60;
  constexpr int kColdKeys = 80;
  constexpr int kMinRounds = 40;
  constexpr int kMaxRounds = 4000;
  std::map<std::string, std::string> cold;
  {
    Writer w(ks);
    for (int pass = 0; pass < 2; pass++) {
      for (int i = 0; i < (pass == 0 ? kColdKeys : kColdKeys / 2); i++) {
        const std::string k = "cold" + std::to_string(i);
        cold[k] = k + "/" + std::to_string(pass) + std::string(200, 'c');
        ASSERT_TRUE(w.Put(k, cold[k]).ok());
      }
    }
  }
  ASSERT_GE(ks->Stats().sealed_segments, 1u);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> puts{0};
  std::atomic<uint32_t> cleaned{0};
  std::atomic<uint32_t> cleaned_during_writes{0};
  std::atomic<int> writers_running{2};
  std::thread cleaner([&] {
    while (puts.load() == 0) std::this_thread::yield();
    while (!stop.load()) {
      auto r = ks->Clean(0.7, 4);
      if (r.ok()) {
        cleaned += *r;
        if (writers_running.load() > 0) cleaned_during_writes += *r;
      } else if (!r.status().IsNoSpace()) {
        bad++;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::thread reader([&] {
    std::string v;
    while (!stop.load()) {
      for (int t = 0; t < 2; t++) {
        for (int i = 0; i < kKeys; i++) {
          const std::string k =
              "w" + std::to_string(t) + "-" + std::to_string(i);
          Status st = ks->Get(k, &v);
          if (st.ok() ? v.rfind(k + "/", 0) != 0 : !st.IsNotFound()) bad++;
        }
      }
    }
  });
  int last_round[2] = {0, 0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; t++) {
    writers.emplace_back([&, t] {
      Writer w(ks);
      int round = 0;
      for (; round < kMaxRounds &&
             (round < kMinRounds || cleaned_during_writes.load() == 0);
           round++) {
        for (int i = 0; i < kKeys; i++) {
          const std::string k =
              "w" + std::to_string(t) + "-" + std::to_string(i);
          const std::string v =
              k + "/" + std::to_string(round) + "/" + std::string(150, 'x');
          Result<CommitResult> r = w.Put(k, v);
          for (int retry = 0; !r.ok() && r.status().IsNoSpace() && retry < 100;
               retry++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            r = w.Put(k, v);
          }
          if (!r.ok()) bad++;
          puts++;
        }
      }
      last_round[t] = round - 1;
      writers_running--;
    });
  }
  for (auto& th : writers) th.join();
  stop = true;
  cleaner.join();
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(cleaned.load(), 0u);
  EXPECT_GT(cleaned_during_writes.load(), 0u);
  std::string v;
  for (int t = 0; t < 2; t++) {
    for (int i = 0; i < kKeys; i++) {
      const std::string k = "w" + std::to_string(t) + "-" + std::to_string(i);
      ASSERT_TRUE(ks->Get(k, &v).ok());
      EXPECT_EQ(v.rfind(k + "/" + std::to_string(last_round[t]) + "/", 0), 0u)
          << v.substr(0, 20);
    }
  }
  for (const auto& [k, want] : cold) {
    ASSERT_TRUE(ks->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, want);
  }
  EXPECT_TRUE(pool->Check().ok());
}

}  // namespace
}  // namespace kv::store
