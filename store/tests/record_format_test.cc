// record_format.h / index_format.h / keyspace_name.h: the formats clients
// share, checked without any store code.
#include "kv/record_format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/index_format.h"
#include "kv/keyspace_name.h"

namespace kv {
namespace {

namespace rf = record_format;
namespace ix = index_format;

TEST(RecordFormatTest, EncodeVerifyRoundTrip) {
  std::vector<uint8_t> buf(rf::RecordSize(3, 5));
  EXPECT_EQ(buf.size(), 64u);
  EXPECT_EQ(rf::EncodeRecord(buf.data(), 7, 42, false, "key", "value"), 64u);
  rf::RecordView v;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), buf.size(), 7, &v).ok());
  EXPECT_EQ(v.key, "key");
  EXPECT_EQ(v.value, "value");
  EXPECT_EQ(v.header.sequence, 42u);
  EXPECT_FALSE(v.tombstone());
}

TEST(RecordFormatTest, VerifyNamesEachProblem) {
  std::vector<uint8_t> buf(128);
  rf::EncodeRecord(buf.data(), 7, 42, true, "k", "");
  rf::RecordView v;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), 64, 7, &v).ok());
  EXPECT_TRUE(v.tombstone());
  EXPECT_NE(rf::VerifyRecord(buf.data(), 64, 8, &v).message().find("keyspace"),
            std::string::npos);
  EXPECT_NE(rf::VerifyRecord(buf.data(), 16, 7, &v).message().find("header"),
            std::string::npos);
  auto bad = buf;
  bad[32] ^= 1;
  EXPECT_NE(rf::VerifyRecord(bad.data(), 64, 7, &v).message().find("CRC32C"),
            std::string::npos);
  bad = buf;
  bad[6] = 0;  // key_len 0
  bad[7] = 0;
  EXPECT_NE(
      rf::VerifyRecord(bad.data(), 64, 7, &v).message().find("key length"),
      std::string::npos);
  bad = buf;
  bad[8] = 200;  // value_len 200 > extent
  EXPECT_NE(
      rf::VerifyRecord(bad.data(), 64, 7, &v).message().find("do not fit"),
      std::string::npos);
  bad = buf;
  bad[4] = 0x80;
  EXPECT_NE(rf::VerifyRecord(bad.data(), 64, 7, &v).message().find("flags"),
            std::string::npos);
}

TEST(IndexFormatTest, SlotPackUnpack) {
  const ix::SlotFields f{0xbeef, 0x1234, 0xdeadbeef};
  const uint64_t s = ix::PackSlot(f);
  EXPECT_EQ(s, 0xbeef1234deadbeefull);
  EXPECT_EQ(ix::UnpackSlot(s).fingerprint, 0xbeef);
  EXPECT_EQ(ix::UnpackSlot(s).units, 0x1234);
  EXPECT_EQ(ix::UnpackSlot(s).offset_units, 0xdeadbeefu);
}

TEST(IndexFormatTest, HashIsStableAndFingerprintNonZero) {
  // Pinned values: the hash is a published format; changing it breaks
  // every pool and client.
  EXPECT_EQ(ix::HashKey(""), 0x7acdbb98b1344213ull);
  EXPECT_EQ(ix::HashKey("a"), 0xaf7be93829797644ull);
  EXPECT_EQ(ix::HashKey("user000000000001"), 0xcbf60eeb06196396ull);
  EXPECT_NE(ix::HashKey("a"), ix::HashKey("b"));
  // Length is mixed in: a trailing NUL changes the hash.
  EXPECT_NE(ix::HashKey("abcdefgh"), ix::HashKey(std::string("abcdefgh\0", 9)));
  for (int i = 0; i < 100000; i++) {
    EXPECT_NE(ix::Fingerprint(ix::HashKey(std::to_string(i))), 0);
  }
  EXPECT_EQ(ix::Fingerprint(0x10000), 1);
}

TEST(KeyspaceNameTest, Rules) {
  EXPECT_TRUE(ValidateKeyspaceName("a").ok());
  EXPECT_TRUE(ValidateKeyspaceName("A-z_0.9").ok());
  EXPECT_TRUE(ValidateKeyspaceName(std::string(63, 'x')).ok());
  EXPECT_TRUE(ValidateKeyspaceName("").IsInvalidArgument());
  EXPECT_TRUE(ValidateKeyspaceName(std::string(64, 'x')).IsInvalidArgument());
  EXPECT_TRUE(ValidateKeyspaceName("a b").IsInvalidArgument());
  EXPECT_TRUE(ValidateKeyspaceName("ä").IsInvalidArgument());
}

}  // namespace
}  // namespace kv
