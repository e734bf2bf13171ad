// The snapshot schema's encodings: round trips and every decode error.
#include "snapshot_format.h"

#include <gtest/gtest.h>

namespace kv::kvadmin::snapshot {
namespace {

TEST(SnapshotFormatTest, KeysSortByKeyspaceThenKey) {
  EXPECT_EQ(IdKey(1), std::string("\0\0\0\1", 4));
  EXPECT_LT(EntryKey(1, "zzz"), EntryKey(2, "a"));
  EXPECT_LT(EntryKey(256, "a"), EntryKey(257, "a"));
  EXPECT_LT(SegmentKey(1, 255), SegmentKey(1, 256));
  uint32_t id = 0;
  std::string_view key;
  const std::string k = EntryKey(7, std::string_view("k\0x", 3));
  ASSERT_TRUE(ParseEntryKey(k, &id, &key).ok());
  EXPECT_EQ(id, 7u);
  EXPECT_EQ(key, std::string_view("k\0x", 3));
  EXPECT_TRUE(ParseEntryKey("\0\0\0\1", &id, &key).IsCorruption());
  EXPECT_TRUE(ParseIdKey("abc", &id).IsCorruption());
}

TEST(SnapshotFormatTest, CatalogRoundTripAndErrors) {
  CatalogValue v;
  v.id = 3;
  v.region_offset = 65536;
  v.region_size = 1 << 20;
  v.bucket_count = 256;
  v.log_offset = 65536 + 20480;
  v.log_size = 1 << 19;
  v.segment_size = 1 << 16;
  v.max_value_size = 4096;
  v.keys = 12;
  v.live_bytes = 768;
  v.name = "users";
  const std::string b = EncodeCatalog(v);
  EXPECT_EQ(b.size(), 69u + 5);
  CatalogValue w;
  ASSERT_TRUE(DecodeCatalog(b, &w).ok());
  EXPECT_EQ(EncodeCatalog(w), b);
  EXPECT_EQ(w.name, "users");
  EXPECT_EQ(w.log_offset, v.log_offset);
  EXPECT_TRUE(DecodeCatalog(b.substr(0, 60), &w).IsCorruption());
  EXPECT_TRUE(DecodeCatalog(b + "x", &w).IsCorruption());  // name length
}

TEST(SnapshotFormatTest, EntryAndSegmentRoundTripAndErrors) {
  EntryValue e{9, 4096, 128, (1ull << 40) + 5, 0xdeadbeef, 70, 0};
  char b[kEntryValueSize];
  EncodeEntry(e, b);
  EntryValue f;
  ASSERT_TRUE(DecodeEntry(std::string_view(b, sizeof(b)), &f).ok());
  EXPECT_EQ(f.slot, 9u);
  EXPECT_EQ(f.sequence, (1ull << 40) + 5);
  EXPECT_EQ(f.crc, 0xdeadbeefu);
  EXPECT_EQ(f.value_len, 70u);
  EXPECT_TRUE(DecodeEntry(std::string_view(b, 37), &f).IsCorruption());
  SegmentValue s{1, 640, 10}, t;
  ASSERT_TRUE(DecodeSegment(EncodeSegment(s), &t).ok());
  EXPECT_EQ(t.live_records, 10u);
  EXPECT_TRUE(DecodeSegment("short", &t).IsCorruption());
}

TEST(SnapshotFormatTest, ChecksumCoversKeyBoundaries) {
  // ("ab", "c") and ("a", "bc") must not checksum alike.
  EXPECT_NE(ExtendEntriesCrc(0, "ab", "c"), ExtendEntriesCrc(0, "a", "bc"));
  EXPECT_EQ(ExtendEntriesCrc(ExtendEntriesCrc(0, "a", "1"), "b", "2"),
            ExtendEntriesCrc(ExtendEntriesCrc(0, "a", "1"), "b", "2"));
}

}  // namespace
}  // namespace kv::kvadmin::snapshot
