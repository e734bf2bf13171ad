#include "kv/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kv {
namespace {

// Check values from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, MatchesRfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; i++) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(dec.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, HardwareAndPortableAgree) {
  std::string s;
  for (int i = 0; i < 1000; i++) {
    s.push_back(static_cast<char>(i * 7 + 3));
    ASSERT_EQ(Crc32c(s.data(), s.size()),
              Crc32cPortableForTest(s.data(), s.size()))
        << "length " << s.size();
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string s = "hello, persistent world";
  uint32_t whole = Crc32c(s.data(), s.size());
  uint32_t part = Crc32cExtend(Crc32c(s.data(), 5), s.data() + 5, s.size() - 5);
  EXPECT_EQ(whole, part);
}

}  // namespace
}  // namespace kv
