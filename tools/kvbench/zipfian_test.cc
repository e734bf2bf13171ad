#include "zipfian.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace kvbench {
namespace {

double Zeta(uint64_t n, double theta) {
  double sum = 0;
  for (uint64_t i = 1; i <= n; i++) sum += 1.0 / std::pow(i, theta);
  return sum;
}

std::vector<uint64_t> Counts(const ZipfianGenerator& z, int draws) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint64_t> counts(z.items(), 0);
  for (int i = 0; i < draws; i++) {
    uint64_t r = z.Next(u(rng));
    EXPECT_LT(r, z.items());
    if (r < z.items()) counts[r]++;
  }
  return counts;
}

TEST(ZipfianGeneratorTest, TopRanksFollowZipfLaw) {
  constexpr uint64_t kItems = 1000;
  constexpr int kDraws = 1000000;
  ZipfianGenerator z(kItems, 0.99);
  std::vector<uint64_t> counts = Counts(z, kDraws);
  double zeta = Zeta(kItems, 0.99);
  // Ranks 0 and 1 are placed exactly by the algorithm; the others come
  // from a continuous approximation, close for the head of the curve.
  for (uint64_t rank : {0, 1}) {
    double expected = kDraws / std::pow(rank + 1.0, 0.99) / zeta;
    EXPECT_NEAR(counts[rank], expected, expected * 0.02) << "rank " << rank;
  }
  // The share of the top 10% of ranks, as the law gives it.
  double top = 0, expected_top = 0;
  for (uint64_t r = 0; r < kItems / 10; r++) {
    top += counts[r];
    expected_top += kDraws / std::pow(r + 1.0, 0.99) / zeta;
  }
  EXPECT_NEAR(top, expected_top, expected_top * 0.05);
  // Skewed: ~13% of draws on rank 0, far more than uniform's 0.1%.
  EXPECT_GT(counts[0], 0.12 * kDraws);
  EXPECT_GT(counts[0], counts[1]);
  EXPECT_GT(counts[1], counts[10]);
  EXPECT_GT(counts[10], counts[500]);
  // The tail is still reached.
  uint64_t tail = 0;
  for (uint64_t r = kItems / 2; r < kItems; r++) tail += counts[r];
  EXPECT_GT(tail, 0.02 * kDraws);
}

TEST(ZipfianGeneratorTest, LowerThetaIsLessSkewed) {
  std::vector<uint64_t> skewed = Counts(ZipfianGenerator(1000, 0.99), 200000);
  std::vector<uint64_t> flat = Counts(ZipfianGenerator(1000, 0.5), 200000);
  EXPECT_GT(skewed[0], 2 * flat[0]);
}

TEST(ZipfianGeneratorTest, GrowMatchesFreshGenerator) {
  ZipfianGenerator grown(100, 0.99);
  grown.Grow(5000);
  ZipfianGenerator fresh(5000, 0.99);
  EXPECT_EQ(grown.items(), 5000u);
  for (double u : {0.0, 0.05, 0.2, 0.5, 0.77, 0.99, 0.999999}) {
    EXPECT_EQ(grown.Next(u), fresh.Next(u)) << "u=" << u;
  }
  grown.Grow(10);  // never shrinks
  EXPECT_EQ(grown.items(), 5000u);
}

TEST(ZipfianGeneratorTest, SingleItemAlwaysRankZero) {
  ZipfianGenerator z(1, 0.99);
  for (double u : {0.0, 0.5, 0.999}) EXPECT_EQ(z.Next(u), 0u);
}

TEST(ScrambleTest, SpreadsRanksOverTheRange) {
  constexpr uint64_t kN = 100000;
  std::set<uint64_t> seen;
  for (uint64_t r = 0; r < 1000; r++) {
    uint64_t k = Scramble(r, kN);
    EXPECT_LT(k, kN);
    seen.insert(k);
  }
  EXPECT_GT(seen.size(), 990u);                     // few collisions
  EXPECT_NE(Scramble(0, kN) + 1, Scramble(1, kN));  // neighbours spread
  EXPECT_EQ(Scramble(7, kN), Scramble(7, kN));      // deterministic
}

}  // namespace
}  // namespace kvbench
