#include "histogram.h"

#include <gtest/gtest.h>

#include <random>

namespace kvbench {
namespace {

TEST(HistogramTest, EmptyReportsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_TRUE(h.Cdf().empty());
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; v++) h.Record(v);
  EXPECT_EQ(h.Percentile(0.5), 50u);
  EXPECT_EQ(h.Percentile(0.9), 90u);
  EXPECT_EQ(h.Percentile(0.99), 99u);
  EXPECT_EQ(h.Percentile(1.0), 100u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(HistogramTest, PercentilesOfMicrosecondsWithinBucketPrecision) {
  Histogram h;
  // 1..100000 us, shuffled: nearest-rank p of N equal steps is p*N.
  std::vector<uint64_t> v;
  for (uint64_t us = 1; us <= 100000; us++) v.push_back(us * 1000);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(7));
  for (uint64_t ns : v) h.Record(ns);
  struct Case {
    double p;
    uint64_t exact;
  };
  for (Case c : {Case{0.5, 50000000}, Case{0.9, 90000000}, Case{0.99, 99000000},
                 Case{0.999, 99900000}}) {
    uint64_t got = h.Percentile(c.p);
    EXPECT_GE(got, c.exact) << "p=" << c.p;
    EXPECT_LE(got, c.exact + c.exact / 64) << "p=" << c.p;
  }
  EXPECT_EQ(h.max(), 100000000u);  // max is exact, never a bucket edge
  EXPECT_EQ(h.Percentile(1.0), 100000000u);
  EXPECT_EQ(h.min(), 1000u);
}

TEST(HistogramTest, OutlierShowsOnlyInTheTail) {
  Histogram h;
  for (int i = 0; i < 999; i++) h.Record(20000);  // 20 us
  h.Record(5000000);                              // one 5 ms stall
  EXPECT_LE(h.Percentile(0.99), 20000u + 20000u / 64);
  EXPECT_EQ(h.Percentile(0.9999), 5000000u);
  EXPECT_EQ(h.max(), 5000000u);
}

TEST(HistogramTest, MergeEqualsRecordingEverything) {
  Histogram a, b, all;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; i++) {
    uint64_t v = rng() % 10000000;
    (i % 2 ? a : b).Record(v);
    all.Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_EQ(a.min(), all.min());
  for (double p : {0.1, 0.5, 0.9, 0.99, 0.999}) {
    EXPECT_EQ(a.Percentile(p), all.Percentile(p));
  }
}

TEST(HistogramTest, BucketsBoundEveryValueWithinOneSixtyFourth) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; i++) {
    uint64_t v = rng() >> (rng() % 64);
    size_t b = Histogram::BucketOf(v);
    uint64_t upper = Histogram::BucketUpper(b);
    ASSERT_GE(upper, v);
    ASSERT_LE(upper - v, v / 64 + 1) << v;
    if (b > 0) ASSERT_LT(Histogram::BucketUpper(b - 1), v) << v;
  }
  EXPECT_EQ(Histogram::BucketUpper(Histogram::BucketOf(UINT64_MAX)),
            UINT64_MAX);
}

TEST(HistogramTest, CdfIsAscendingAndEndsAtOne) {
  Histogram h;
  for (uint64_t v : {5000, 7000, 7000, 90000}) h.Record(v);
  auto cdf = h.Cdf();
  ASSERT_EQ(cdf.size(), 3u);
  EXPECT_DOUBLE_EQ(cdf[0].second, 0.25);
  EXPECT_DOUBLE_EQ(cdf[1].second, 0.75);
  EXPECT_DOUBLE_EQ(cdf[2].second, 1.0);
  EXPECT_EQ(cdf[2].first, 90000u);
  EXPECT_LT(cdf[0].first, cdf[1].first);
}

}  // namespace
}  // namespace kvbench
