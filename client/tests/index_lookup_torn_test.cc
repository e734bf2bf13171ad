// The reader algorithm (kv/index_lookup.h) over every snapshot a reader
// can take of a key's neighbourhood while the key is updated or its
// record moved: each consistent snapshot finds the key (the newest
// version when two are visible); only a torn one (old slot cleared, new
// one not yet seen) looks like absence, which is why a caller re-reads
// the neighbourhood before reporting not_found (client: ConfirmAbsent).
// The log is a scripted fake memory whose bytes change between reads.
#include <gtest/gtest.h>

#include <vector>

#include "kv/index_lookup.h"

namespace kv::index_lookup {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;

class IndexLookupTornTest : public ::testing::Test {
 protected:
  uint64_t Record(uint64_t off, std::string_view key, std::string_view value,
                  uint64_t seq) {
    const size_t n = rf::EncodeRecord(log_.data() + off, g_.keyspace_id, seq,
                                      false, key, value);
    return ix::PackSlot({ix::Fingerprint(ix::HashKey(key)),
                         static_cast<uint16_t>(n / 64),
                         static_cast<uint32_t>(off / 64)});
  }
  // A reader's view: the neighbourhood copy it took, the log as it is
  // when the records are read.
  Choice Read(const uint64_t* neigh, std::string_view key) {
    return ChooseNewest(neigh, g_, key, ix::HashKey(key),
                        [&](size_t, uint64_t s) -> const uint8_t* {
                          return log_.data() + ix::SlotLogOffset(s);
                        });
  }
  Geometry g_{7, 16, 1 << 16, 1 << 14};
  std::vector<uint8_t> log_ = std::vector<uint8_t>(1 << 16);
};

TEST_F(IndexLookupTornTest, EveryConsistentSnapshotOfAnUpdateFindsTheKey) {
  const uint64_t old_slot = Record(0, "k", "old", 3);
  uint64_t neigh[kNeighbourhoodSlots] = {};
  neigh[2] = old_slot;
  Choice c = Read(neigh, "k");  // before the update
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.view.value, "old");
  // The new record is written, then its slot published in the probe
  // bucket: both visible, the newer wins wherever each one sits.
  const uint64_t new_slot = Record(4096, "k", "new", 4);
  for (size_t pos : {size_t{0}, size_t{9}, kNeighbourhoodSlots - 1}) {
    uint64_t both[kNeighbourhoodSlots] = {};
    both[2] = old_slot;
    both[pos == 2 ? 3 : pos] = new_slot;
    c = Read(both, "k");
    ASSERT_TRUE(c.found()) << pos;
    EXPECT_EQ(c.view.value, "new") << pos;
    EXPECT_EQ(c.view.header.sequence, 4u);
  }
  // The old slot cleared: the new one alone.
  uint64_t after[kNeighbourhoodSlots] = {};
  after[9] = new_slot;
  c = Read(after, "k");
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.view.value, "new");
  // A torn copy (home bucket read after the clear, probe bucket before
  // the publish) holds neither: not found and nothing bad — the caller
  // cannot tell it from absence without a second read.
  uint64_t torn[kNeighbourhoodSlots] = {};
  c = Read(torn, "k");
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.bad_pos, -1);
}

TEST_F(IndexLookupTornTest, AStaleSlotWhosePlaceWasReusedIsNotAMatch) {
  // The copy names the key's old place; by the time the record is read,
  // the cleaner moved the key and the segment was reused by another key
  // (same bytes length): another key's record, or garbage.
  uint64_t neigh[kNeighbourhoodSlots] = {};
  neigh[0] = Record(0, "k", "v", 5);
  Record(0, "q", "w", 9);  // the place reused
  Choice c = Read(neigh, "k");
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.bad_pos, -1);  // a valid record of another key
  log_[33] ^= 1;             // half-written: fails verification
  c = Read(neigh, "k");
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.bad_pos, 0);
  // At its new place (a consistent copy) the key is found.
  neigh[0] = Record(8192, "k", "v", 5);
  c = Read(neigh, "k");
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.view.value, "v");
}

TEST_F(IndexLookupTornTest, ARecordTheCallerCannotProvideIsSkippedNotBad) {
  uint64_t neigh[kNeighbourhoodSlots] = {};
  neigh[1] = Record(0, "k", "v", 1);
  const Choice c =
      ChooseNewest(neigh, g_, "k", ix::HashKey("k"),
                   [](size_t, uint64_t) -> const uint8_t* { return nullptr; });
  EXPECT_FALSE(c.found());
  EXPECT_EQ(c.bad_pos, -1);
}

TEST_F(IndexLookupTornTest, SlotBoundsAreExactAtTheLogAndSegmentEnds) {
  const uint16_t fp = ix::Fingerprint(ix::HashKey("k"));
  const uint32_t log_units = (1 << 16) / 64, seg_units = (1 << 14) / 64;
  auto bad = [&](uint32_t off_units, uint16_t units) {
    uint64_t neigh[kNeighbourhoodSlots] = {};
    neigh[0] = ix::PackSlot({fp, units, off_units});
    const Choice c = Read(neigh, "k");
    return !c.found() && c.bad_pos == 0 &&
           c.bad_why.find("outside the log") != std::string::npos;
  };
  EXPECT_TRUE(bad(log_units - 1, 2));  // one unit past the log's end
  EXPECT_TRUE(bad(log_units, 1));
  EXPECT_TRUE(bad(seg_units - 1, 2));  // across a segment's end
  EXPECT_TRUE(bad(0, 0));              // no length
  EXPECT_TRUE(bad(5, 0));              // no length, inside a segment
  // The last unit of the log and of a segment are in bounds (judged by
  // their record: here zeroed, so bad for another reason).
  uint64_t neigh[kNeighbourhoodSlots] = {};
  neigh[0] = ix::PackSlot({fp, 1, log_units - 1});
  Choice c = Read(neigh, "k");
  EXPECT_EQ(c.bad_pos, 0);
  EXPECT_EQ(c.bad_why.find("outside the log"), std::string::npos);
  neigh[0] = Record((seg_units - 1) * 64, "k", "v", 2);
  c = Read(neigh, "k");
  ASSERT_TRUE(c.found());
  EXPECT_EQ(c.view.value, "v");
}

}  // namespace
}  // namespace kv::index_lookup
