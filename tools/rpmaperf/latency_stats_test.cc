#include "latency_stats.h"

#include <gtest/gtest.h>

namespace rpmaperf {
namespace {

TEST(LatencyStatsTest, PercentilesUseNearestRank) {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= 100; i++) v.push_back(i);
  EXPECT_EQ(Percentile(v, 50), 50u);
  EXPECT_EQ(Percentile(v, 99), 99u);
  EXPECT_EQ(Percentile(v, 100), 100u);
  EXPECT_EQ(Percentile(v, 0), 1u);
  EXPECT_EQ(Percentile({}, 50), 0u);
}

TEST(LatencyStatsTest, SummarizesRatesAndLatencies) {
  LatencyStats stats(16);
  for (int i = 0; i < 10; i++) stats.Add(2000 * (10 - i));  // 2..20 us
  Summary s = stats.Summarize(2.0, 1000);
  EXPECT_EQ(s.ops, 10u);
  EXPECT_DOUBLE_EQ(s.ops_per_sec, 5.0);
  EXPECT_DOUBLE_EQ(s.mb_per_sec, 5.0 * 1000 / 1e6);
  EXPECT_DOUBLE_EQ(s.p50_us, 10.0);
  EXPECT_DOUBLE_EQ(s.max_us, 20.0);
}

}  // namespace
}  // namespace rpmaperf
