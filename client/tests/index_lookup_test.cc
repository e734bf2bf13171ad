// The reader algorithm both the store and the client run
// (kv/index_lookup.h), over hand-built neighbourhoods and records.
#include "kv/index_lookup.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace kv::index_lookup {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;

class IndexLookupTest : public ::testing::Test {
 protected:
  // Writes a committed record at `off` of the fake log; returns its slot.
  uint64_t Record(uint64_t off, std::string_view key, std::string_view value,
                  uint64_t seq, bool tombstone = false) {
    const size_t n = rf::EncodeRecord(log_.data() + off, g_.keyspace_id, seq,
                                      tombstone, key, value);
    return ix::PackSlot({ix::Fingerprint(ix::HashKey(key)),
                         static_cast<uint16_t>(n / 64),
                         static_cast<uint32_t>(off / 64)});
  }
  Choice Choose(std::string_view key) {
    return ChooseNewest(neigh_, g_, key, ix::HashKey(key),
                        [&](size_t, uint64_t s) -> const uint8_t* {
                          return log_.data() + ix::SlotLogOffset(s);
                        });
  }
  Geometry g_{5, 16, 1 << 16, 1 << 14};
  std::vector<uint8_t> log_ = std::vector<uint8_t>(1 << 16);
  uint64_t neigh_[kNeighbourhoodSlots] = {};
};

TEST_F(IndexLookupTest, PicksTheHighestSequenceAmongValidVersions) {
  neigh_[3] = Record(0, "k", "old", 10);
  neigh_[9] = Record(128, "k", "new", 20);
  const Choice c = Choose("k");
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.pos, 9);
  EXPECT_EQ(c.view.value, "new");
  EXPECT_EQ(c.bad_pos, -1);
}

TEST_F(IndexLookupTest, SkipsOtherKeysAndReportsBadSlots) {
  // Another key's record under this key's fingerprint: a collision, skipped.
  const uint64_t other = Record(0, "other", "x", 1);
  const uint16_t fp = ix::Fingerprint(ix::HashKey("k"));
  neigh_[0] = (other & ~(uint64_t{0xffff} << 48)) | (uint64_t{fp} << 48);
  EXPECT_FALSE(Choose("k").found());
  EXPECT_EQ(Choose("k").bad_pos, -1);
  // A slot pointing across a segment, and one at a tombstone, are bad.
  neigh_[1] =
      ix::PackSlot({fp, 2, static_cast<uint32_t>(((1 << 14) - 64) / 64)});
  neigh_[2] = Record(1024, "k", "", 5, /*tombstone=*/true);
  Choice c = Choose("k");
  EXPECT_FALSE(c.found());
  EXPECT_GE(c.bad_pos, 1);
  // A damaged record is bad; a valid one beside it still wins.
  neigh_[4] = Record(2048, "k", "good", 7);
  log_[2048 + 34] ^= 1;  // inside the value: CRC fails
  neigh_[5] = Record(4096, "k", "fine", 6);
  c = Choose("k");
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.view.value, "fine");
}

TEST_F(IndexLookupTest, ARecordOfAnotherKeyspaceIsBad) {
  neigh_[0] = Record(0, "k", "v", 1);
  Geometry other = g_;
  other.keyspace_id = 6;
  const Choice c = ChooseNewest(neigh_, other, "k", ix::HashKey("k"),
                                [&](size_t, uint64_t s) -> const uint8_t* {
                                  return log_.data() + ix::SlotLogOffset(s);
                                });
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.bad_pos, 0);
}

}  // namespace
}  // namespace kv::index_lookup
