// The pure parts of kvserver's resource bounds: the REFILL token bucket,
// the keyspace grant quota, the access-key delay.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "auth_delay.h"
#include "grant_quota.h"
#include "token_bucket.h"

namespace kv::server {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucketTest, BurstThenRateThenRetryHint) {
  TokenBucket b(10, 3);  // 10/s, burst 3
  const auto t0 = TokenBucket::Clock::now();
  milliseconds retry{0};
  for (int i = 0; i < 3; i++) EXPECT_TRUE(b.Take(t0, &retry)) << i;
  EXPECT_FALSE(b.Take(t0, &retry));
  EXPECT_GE(retry.count(), 1);
  EXPECT_LE(retry.count(), 100);
  // 100 ms later exactly one more token (10/s).
  EXPECT_TRUE(b.Take(t0 + milliseconds(100), &retry));
  EXPECT_FALSE(b.Take(t0 + milliseconds(100), &retry));
  // A long pause refills only up to the burst.
  const auto later = t0 + milliseconds(60000);
  for (int i = 0; i < 3; i++) EXPECT_TRUE(b.Take(later, &retry)) << i;
  EXPECT_FALSE(b.Take(later, &retry));
}

TEST(TokenBucketTest, ClockGoingBackwardsGrantsNothing) {
  TokenBucket b(1, 1);
  const auto t0 = TokenBucket::Clock::now() + milliseconds(1000);
  milliseconds retry{0};
  EXPECT_TRUE(b.Take(t0, &retry));
  EXPECT_FALSE(b.Take(t0 - milliseconds(500), &retry));
}

TEST(GrantQuotaTest, NeverCountsMoreThanTheCapUnderContention) {
  GrantQuota q(5);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; i++) {
        if (q.TryTake()) taken++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(taken.load(), 5);
  EXPECT_EQ(q.open(), 5u);
  q.Release();
  EXPECT_TRUE(q.TryTake());
  EXPECT_FALSE(q.TryTake());
}

TEST(AuthDelayTest, GrowsWithRecentFailuresUpToTheMaxAndDecays) {
  AuthDelay d(milliseconds(100), milliseconds(300), -1);
  const auto t0 = AuthDelay::Clock::now();
  EXPECT_EQ(d.Fail(t0).count(), 100);
  EXPECT_EQ(d.Fail(t0).count(), 110);
  milliseconds last{0};
  for (int i = 0; i < 50; i++) last = d.Fail(t0);
  EXPECT_EQ(last.count(), 300);  // capped
  // A quiet minute: the count halves every 10 s, back to near the base.
  EXPECT_LT(d.Fail(t0 + std::chrono::seconds(60)).count(), 110);
}

TEST(AuthDelayTest, ZeroBaseMeansNoDelay) {
  AuthDelay d(milliseconds(0), milliseconds(0), -1);
  EXPECT_EQ(d.Fail(AuthDelay::Clock::now()).count(), 0);
}

}  // namespace
}  // namespace kv::server
