#include "workload.h"

#include <gtest/gtest.h>

namespace kvbench {
namespace {

std::array<double, kOpTypes> NoCustom() { return {}; }

TEST(WorkloadTest, CoreMixesAreYcsbs) {
  struct Case {
    const char* name;
    std::array<double, kOpTypes> mix;
    Distribution dist;
  };
  for (const Case& c :
       {Case{"a", {0.5, 0.5, 0, 0, 0}, Distribution::kZipfian},
        Case{"b", {0.95, 0.05, 0, 0, 0}, Distribution::kZipfian},
        Case{"c", {1, 0, 0, 0, 0}, Distribution::kZipfian},
        Case{"d", {0.95, 0, 0.05, 0, 0}, Distribution::kLatest},
        Case{"f", {0.5, 0, 0, 0, 0.5}, Distribution::kZipfian}}) {
    WorkloadSpec spec;
    spec.name = c.name;
    ASSERT_TRUE(ResolveWorkload(NoCustom(), false, &spec).ok()) << c.name;
    EXPECT_EQ(spec.mix, c.mix) << c.name;
    EXPECT_EQ(spec.distribution, c.dist) << c.name;
  }
}

TEST(WorkloadTest, ExplicitDistributionWins) {
  WorkloadSpec spec;
  spec.name = "d";
  spec.distribution = Distribution::kUniform;
  ASSERT_TRUE(ResolveWorkload(NoCustom(), true, &spec).ok());
  EXPECT_EQ(spec.distribution, Distribution::kUniform);
}

TEST(WorkloadTest, CustomRatiosMustAddUpToOne) {
  WorkloadSpec spec;
  spec.name = "custom";
  EXPECT_TRUE(ResolveWorkload({0.5, 0.2, 0.1, 0.1, 0.1}, false, &spec).ok());
  EXPECT_TRUE(
      ResolveWorkload({0.5, 0.2, 0, 0, 0}, false, &spec).IsInvalidArgument());
  EXPECT_TRUE(
      ResolveWorkload({1.5, -0.5, 0, 0, 0}, false, &spec).IsInvalidArgument());
}

TEST(WorkloadTest, RefusesBadNamesAndSizes) {
  WorkloadSpec spec;
  spec.name = "e";
  EXPECT_TRUE(ResolveWorkload(NoCustom(), false, &spec).IsInvalidArgument());
  spec.name = "a";
  spec.key_size = 4;  // no room for 100000 ids
  EXPECT_TRUE(ResolveWorkload(NoCustom(), false, &spec).IsInvalidArgument());
  spec.key_size = 16;
  spec.value_min = spec.value_max = 8;  // below the self-check header
  EXPECT_TRUE(ResolveWorkload(NoCustom(), false, &spec).IsInvalidArgument());
  spec.value_min = 64;
  spec.value_max = 32;
  EXPECT_TRUE(ResolveWorkload(NoCustom(), false, &spec).IsInvalidArgument());
  spec.value_max = 64;
  spec.zipfian_theta = 1.0;
  EXPECT_TRUE(ResolveWorkload(NoCustom(), false, &spec).IsInvalidArgument());
}

TEST(WorkloadTest, ParsesValueSizes) {
  size_t lo = 0, hi = 0;
  ASSERT_TRUE(ParseValueSize("64", &lo, &hi).ok());
  EXPECT_EQ(lo, 64u);
  EXPECT_EQ(hi, 64u);
  ASSERT_TRUE(ParseValueSize("32:512", &lo, &hi).ok());
  EXPECT_EQ(lo, 32u);
  EXPECT_EQ(hi, 512u);
  EXPECT_FALSE(ParseValueSize("32:", &lo, &hi).ok());
  EXPECT_FALSE(ParseValueSize("x", &lo, &hi).ok());
}

TEST(WorkloadTest, KeysArePaddedToKeySize) {
  std::string k;
  FormatKey(42, 16, &k);
  EXPECT_EQ(k, "k000000000000042");
  FormatKey(0, 8, &k);
  EXPECT_EQ(k, "k0000000");
}

TEST(KeyCounterTest, LimitPassesOnlyCompletedPrefix) {
  KeyCounter c(10);
  uint64_t a = c.Allocate(), b = c.Allocate(), d = c.Allocate();
  EXPECT_EQ(a, 10u);
  EXPECT_EQ(c.limit(), 10u);
  c.Acknowledge(b);  // out of order: 10 is still in flight
  c.Acknowledge(d);
  EXPECT_EQ(c.limit(), 10u);
  c.Acknowledge(a);
  EXPECT_EQ(c.limit(), 13u);
}

TEST(KeyChooserTest, LatestFavoursNewestAndStaysInRange) {
  WorkloadSpec spec;
  spec.distribution = Distribution::kLatest;
  spec.keys = 1000;
  KeyChooser chooser(spec, ZipfianGenerator(1000));
  std::mt19937_64 rng(5);
  int newest = 0;
  for (int i = 0; i < 10000; i++) {
    uint64_t k = chooser.Next(2000, &rng);  // grown by inserts
    ASSERT_LT(k, 2000u);
    newest += k == 1999;
  }
  EXPECT_GT(newest, 1000);  // ~12% on the newest key
}

TEST(OpChooserTest, FollowsTheMix) {
  WorkloadSpec spec;
  spec.mix = {0.95, 0, 0.05, 0, 0};
  OpChooser ops(spec);
  std::mt19937_64 rng(9);
  int inserts = 0;
  for (int i = 0; i < 100000; i++) {
    OpType op = ops.Next(&rng);
    ASSERT_TRUE(op == OpType::kRead || op == OpType::kInsert);
    inserts += op == OpType::kInsert;
  }
  EXPECT_NEAR(inserts, 5000, 400);
}

}  // namespace
}  // namespace kvbench
