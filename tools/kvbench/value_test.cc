#include "value.h"

#include <gtest/gtest.h>

namespace kvbench {
namespace {

TEST(ValueTest, RoundTripsAtEverySize) {
  std::string v;
  for (size_t size : {kMinValueSize, size_t{21}, size_t{64}, size_t{1000}}) {
    MakeValue(12345, 7, size, &v);
    ASSERT_EQ(v.size(), size);
    EXPECT_EQ(CheckValue(12345, v), "") << size;
    EXPECT_EQ(ValueVersion(v), 7u);
  }
}

TEST(ValueTest, DetectsAnotherKeysValue) {
  std::string v;
  MakeValue(1, 0, 64, &v);
  EXPECT_NE(CheckValue(2, v).find("key id 1"), std::string::npos);
}

TEST(ValueTest, DetectsEveryFlippedByte) {
  std::string v;
  MakeValue(99, 3, 64, &v);
  for (size_t i = 0; i < v.size(); i++) {
    std::string bad = v;
    bad[i] ^= 0x10;
    EXPECT_NE(CheckValue(99, bad), "") << "byte " << i;
  }
}

TEST(ValueTest, DetectsTruncationAndShortValues) {
  std::string v;
  MakeValue(5, 1, 64, &v);
  EXPECT_NE(CheckValue(5, v.substr(0, 63)), "");
  EXPECT_NE(CheckValue(5, "short"), "");
  EXPECT_NE(CheckValue(5, ""), "");
}

TEST(ValueTest, VersionsDiffer) {
  std::string a, b;
  MakeValue(5, 1, 64, &a);
  MakeValue(5, 2, 64, &b);
  EXPECT_NE(a, b);
  EXPECT_EQ(CheckValue(5, a), "");
  EXPECT_EQ(CheckValue(5, b), "");
}

}  // namespace
}  // namespace kvbench
