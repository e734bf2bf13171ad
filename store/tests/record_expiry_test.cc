// record_format.h, format version 3: a record with an expiry (flag bit 1,
// 8 bytes after the key, covered by the CRC), as writers write it (a time
// to live) and as SealRecord stamps it (an absolute expiry).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kv/record_format.h"

namespace kv {
namespace {

namespace rf = record_format;

// Offset of the expiry of a record with this key length.
size_t ExpiryAt(size_t key_len) { return rf::kHeaderSize + key_len; }

TEST(RecordExpiryTest, EncodeLaysTheExpiryAfterTheKey) {
  // 32 + 3 + 8 + 21 = 64: the expiry's 8 bytes are part of the size.
  EXPECT_EQ(rf::RecordSize(3, 21), 64u);
  EXPECT_EQ(rf::RecordSize(3, 21, true), 64u);
  EXPECT_EQ(rf::RecordSize(3, 22, true), 128u);
  EXPECT_EQ(rf::RecordSize(3, 29), 64u);
  std::vector<uint8_t> buf(rf::RecordSize(3, 5, true));
  EXPECT_EQ(rf::EncodeRecord(buf.data(), 7, 42, false, "key", "value",
                             0x0102030405060708ull),
            buf.size());
  uint16_t flags = 0;
  std::memcpy(&flags, buf.data() + 4, 2);
  EXPECT_EQ(flags, rf::kFlagExpires);
  // Little-endian, right after the key, then the value.
  const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(std::memcmp(buf.data() + ExpiryAt(3), want, 8), 0);
  EXPECT_EQ(std::memcmp(buf.data() + ExpiryAt(3) + 8, "value", 5), 0);
  rf::RecordView v;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), buf.size(), 7, &v).ok());
  EXPECT_TRUE(v.expires());
  EXPECT_EQ(v.expiry, 0x0102030405060708ull);
  EXPECT_EQ(v.key, "key");
  EXPECT_EQ(v.value, "value");  // value_len excludes the expiry
  EXPECT_EQ(v.header.value_len, 5u);
  EXPECT_EQ(rf::RecordSizeOf(v), buf.size());
  // Without an expiry nothing changes from format 2.
  std::vector<uint8_t> plain(rf::RecordSize(3, 5));
  rf::EncodeRecord(plain.data(), 7, 42, false, "key", "value");
  ASSERT_TRUE(rf::VerifyRecord(plain.data(), plain.size(), 7, &v).ok());
  EXPECT_FALSE(v.expires());
  EXPECT_EQ(v.expiry, 0u);
  EXPECT_EQ(std::memcmp(plain.data() + ExpiryAt(3), "value", 5), 0);
}

TEST(RecordExpiryTest, TheCrcCoversTheExpiry) {
  std::vector<uint8_t> buf(rf::RecordSize(1, 4, true));
  rf::EncodeRecord(buf.data(), 7, 42, false, "k", "vvvv", 1'000'000);
  rf::RecordView v;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), buf.size(), 7, &v).ok());
  // A corrupted expiry — any byte of it — fails verification: no record
  // can come back with a later (or earlier) expiry than it was written.
  for (size_t i = 0; i < rf::kExpirySize; i++) {
    auto bad = buf;
    bad[ExpiryAt(1) + i] ^= 0x10;
    Status st = rf::VerifyRecord(bad.data(), bad.size(), 7, &v);
    EXPECT_TRUE(st.IsCorruption()) << i;
    EXPECT_NE(st.message().find("CRC32C"), std::string::npos) << st.message();
  }
  // Clearing the flag (the expiry bytes would be read as value) fails too.
  auto bad = buf;
  bad[4] &= static_cast<uint8_t>(~rf::kFlagExpires);
  EXPECT_TRUE(rf::VerifyRecord(bad.data(), bad.size(), 7, &v).IsCorruption());
}

TEST(RecordExpiryTest, ARecordCannotHoldMoreThanItsExtent) {
  std::vector<uint8_t> buf(rf::RecordSize(1, 24, true));
  ASSERT_EQ(buf.size(), 128u);  // 32 + 1 + 8 + 24 = 65
  rf::EncodeRecord(buf.data(), 7, 42, false, "k", std::string(24, 'x'), 5);
  rf::RecordView v;
  // Without the 8 expiry bytes it would fit 64; with them it does not.
  EXPECT_NE(rf::VerifyRecord(buf.data(), 64, 7, &v)
                .message()
                .find("do not "
                      "fit"),
            std::string::npos);
  EXPECT_TRUE(rf::VerifyRecord(buf.data(), 128, 7, &v).ok());
}

TEST(RecordExpiryTest, BadExpiriesAreRefusedByRule) {
  rf::RecordView v;
  // A committed record with expiry 0: corruption.
  std::vector<uint8_t> buf(64);
  rf::EncodeRecord(buf.data(), 7, 42, false, "k", "v", 1);
  std::memset(buf.data() + ExpiryAt(1), 0, 8);
  uint32_t crc = Crc32c(buf.data() + 4, rf::kHeaderSize + 1 + 8 + 1 - 4);
  std::memcpy(buf.data(), &crc, 4);
  Status st = rf::VerifyRecord(buf.data(), 64, 7, &v);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("expiry 0"), std::string::npos) << st.message();
  // A tombstone with an expiry: corruption.
  std::vector<uint8_t> t(64);
  rf::EncodeRecord(t.data(), 7, 42, true, "k", "", 5);
  st = rf::VerifyRecord(t.data(), 64, 7, &v);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("tombstone"), std::string::npos);
  // An unsealed record (a writer's) carries a time to live of 1 ms .. 100
  // years: anything else is the writer's invalid_argument.
  for (uint64_t ttl : {uint64_t{0}, rf::kMaxTtlMs + 1, ~uint64_t{0}}) {
    std::vector<uint8_t> w(64);
    rf::EncodeRecord(w.data(), 7, 0, false, "k", "v", ttl == 0 ? 1 : ttl);
    if (ttl == 0) {  // EncodeRecord's 0 is "no expiry": write it by hand
      std::memset(w.data() + ExpiryAt(1), 0, 8);
      crc = Crc32c(w.data() + 4, rf::kHeaderSize + 1 + 8 + 1 - 4);
      std::memcpy(w.data(), &crc, 4);
    }
    st = rf::VerifyRecord(w.data(), 64, 7, &v, rf::SequenceRule::kUnsealed);
    EXPECT_TRUE(st.IsInvalidArgument()) << ttl << ": " << st.ToString();
    EXPECT_NE(st.message().find("time to live"), std::string::npos)
        << st.message();
  }
  for (uint64_t ttl : {uint64_t{1}, rf::kMaxTtlMs}) {
    std::vector<uint8_t> w(64);
    rf::EncodeRecord(w.data(), 7, 0, false, "k", "v", ttl);
    EXPECT_TRUE(
        rf::VerifyRecord(w.data(), 64, 7, &v, rf::SequenceRule::kUnsealed).ok())
        << ttl;
  }
  // Unknown flag bits are still refused.
  std::vector<uint8_t> u(64);
  rf::EncodeRecord(u.data(), 7, 42, false, "k", "v");
  u[4] |= 4;
  EXPECT_NE(rf::VerifyRecord(u.data(), 64, 7, &v).message().find("flags"),
            std::string::npos);
}

TEST(RecordExpiryTest, SealStampsNowPlusTheTimeToLive) {
  std::vector<uint8_t> buf(64);
  rf::EncodeRecord(buf.data(), 7, 0, false, "k", "v", 1500);
  rf::RecordView unsealed;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), 64, 7, &unsealed,
                               rf::SequenceRule::kUnsealed)
                  .ok());
  EXPECT_EQ(unsealed.expiry, 1500u);
  // The writer changes its bytes after the verify: the seal takes the
  // verified time to live, not the bytes.
  buf[ExpiryAt(1)] = 0xff;
  rf::SealRecord(buf.data(), unsealed, 99, 1'700'000'000'000ull);
  rf::RecordView v;
  ASSERT_TRUE(rf::VerifyRecord(buf.data(), 64, 7, &v).ok());
  EXPECT_EQ(v.header.sequence, 99u);
  EXPECT_EQ(v.expiry, 1'700'000'001'500ull);
  EXPECT_EQ(v.value, "v");
  EXPECT_FALSE(rf::Expired(v, 1'700'000'001'499ull));
  EXPECT_TRUE(rf::Expired(v, 1'700'000'001'500ull));  // inclusive
  // A record without an expiry never expires.
  std::vector<uint8_t> plain(64);
  rf::EncodeRecord(plain.data(), 7, 5, false, "k", "v");
  ASSERT_TRUE(rf::VerifyRecord(plain.data(), 64, 7, &v).ok());
  EXPECT_FALSE(rf::Expired(v, ~uint64_t{0}));
}

TEST(RecordExpiryTest, CheckTtlNamesTheLimits) {
  EXPECT_TRUE(rf::CheckTtl(1).ok());
  EXPECT_TRUE(rf::CheckTtl(static_cast<int64_t>(rf::kMaxTtlMs)).ok());
  for (int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN,
                      static_cast<int64_t>(rf::kMaxTtlMs) + 1, INT64_MAX}) {
    Status st = rf::CheckTtl(bad);
    EXPECT_TRUE(st.IsInvalidArgument()) << bad;
    EXPECT_NE(st.message().find("1 ms .. 100 years"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find(std::to_string(bad)), std::string::npos);
  }
}

}  // namespace
}  // namespace kv
