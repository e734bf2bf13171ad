#include "base64.h"

#include <gtest/gtest.h>

namespace kv::cluster {
namespace {

TEST(Base64Test, RoundTripsEveryLengthAndByte) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    Result<std::string> back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back.ok()) << i << ": " << back.status().ToString();
    ASSERT_EQ(*back, bytes) << i;
    bytes += static_cast<char>((i * 37) & 0xff);
  }
}

TEST(Base64Test, MatchesKnownVectors) {  // RFC 4648 section 10
  const std::pair<const char*, const char*> v[] = {{"", ""},
                                                   {"f", "Zg=="},
                                                   {"fo", "Zm8="},
                                                   {"foo", "Zm9v"},
                                                   {"foob", "Zm9vYg=="},
                                                   {"fooba", "Zm9vYmE="},
                                                   {"foobar", "Zm9vYmFy"}};
  for (auto [plain, coded] : v) {
    EXPECT_EQ(Base64Encode(plain), coded);
    Result<std::string> d = Base64Decode(coded);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, plain);
  }
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe", 2)), "//4=");
}

TEST(Base64Test, RefusesWhatIsNotCanonicalBase64) {
  for (const char* bad :
       {"Zg=", "Zg", "Z", "Zm9v!A==", "Zg==Zg==", "=Zg=", "Z===", "Zh==",
        "Zm9=", "Zm-v", "Zm_v", "Zm9v\n", "Zm 9v"}) {
    Result<std::string> d = Base64Decode(bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_TRUE(d.status().IsCorruption()) << bad;
  }
}

}  // namespace
}  // namespace kv::cluster
