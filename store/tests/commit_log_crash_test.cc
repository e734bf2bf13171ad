// The commit log (pool format 4; docs/format.md "Commit log"): a commit
// persists its record and a 32-byte entry, never its buckets, so the index
// on media may lack an acknowledged put or delete until a checkpoint. These
// tests take the images that state leaves, and hostile ones:
//  - an acknowledged update and delete whose buckets never reached media
//    are replayed by a writable open; a read-only one refuses to read the
//    stale index;
//  - a delete's entry outranks the older put's, also after the tombstone's
//    segment was cleaned and granted again (the checkpoint at every grant);
//  - a ring that wrapped many times keeps every key's newest version;
//  - entries that lie (bounds, sequence, flags, CRC, lsn, keyspace) are
//    never replayed; a damaged checkpoint refuses the open.
// The mutation each test catches is in tests/mutation/patches/.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kv/crc32c.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "rare_state_fixture.h"

namespace kv::store {
namespace {

namespace ix = index_format;
namespace rf = record_format;
using testing::kAbsent;
using testing::OpenImage;
using testing::Read;

class CommitLogCrashTest : public testing::TrackedKeyspaceTest {
 protected:
  // The ring and the checkpoint copies in an image (docs/format.md).
  struct Ring {
    uint8_t* entries = nullptr;
    uint64_t count = 0;
    uint8_t* checkpoint = nullptr;  // two 32-byte copies
  };
  Ring RingOf(std::vector<uint8_t>* image) const {
    const KeyspaceInfo i = ks_->info();
    return {image->data() + i.commit_log_offset, i.commit_log_entries,
            image->data() + i.region_offset + 16};
  }
  // The start of the current checkpoint copy.
  static uint64_t Start(const Ring& r) {
    uint64_t best_gen = 0;
    uint64_t start = 0;
    for (int c = 0; c < 2; c++) {
      const uint8_t* p = r.checkpoint + 32 * c;
      uint32_t crc;
      std::memcpy(&crc, p + 28, 4);
      if (crc != Crc32c(p, 28)) continue;
      uint64_t gen;
      std::memcpy(&gen, p, 8);
      if (gen >= best_gen) {
        best_gen = gen;
        std::memcpy(&start, p + 8, 8);
      }
    }
    return start;
  }
  // Writes an entry as the server does (CRC over 28 bytes, then the id).
  void WriteEntry(const Ring& r, uint64_t lsn, uint64_t slot, uint64_t sequence,
                  uint32_t flags, uint64_t position,
                  bool good_crc = true) const {
    uint8_t* p = r.entries + 32 * position;
    std::memcpy(p, &lsn, 8);
    std::memcpy(p + 8, &slot, 8);
    std::memcpy(p + 16, &sequence, 8);
    std::memcpy(p + 24, &flags, 4);
    const uint32_t id = ks_->id();
    uint32_t crc = Crc32cExtend(Crc32c(p, 28), &id, 4);
    if (!good_crc) crc ^= 1;
    std::memcpy(p + 28, &crc, 4);
  }
  static bool NoteHas(Pool* pool, const std::string& what) {
    for (const std::string& n : pool->Info().recovery_notes) {
      if (n.find(what) != std::string::npos) return true;
    }
    return false;
  }
};

// The update's slot store and the old slot's clear are never persisted by
// the commit: with every unpersisted line lost, the index on media holds
// v1 and the entry v2. A read-only open must not serve v1; a writable one
// replays v2, durably.
TEST_F(CommitLogCrashTest, AnUpdateAndADeleteWhoseBucketsAreLostAreReplayed) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "v1").ok());
  ASSERT_TRUE(w.Put("gone", "v1").ok());
  ks_->PersistIndex();  // a checkpoint: both durable in the index
  ASSERT_TRUE(w.Put("key", "v2").ok());
  ASSERT_TRUE(w.Delete("gone").ok());
  const std::vector<uint8_t> image = tp_.LoseUnpersisted();
  {
    auto ro = OpenImage(image, /*read_only=*/true);
    ASSERT_TRUE(ro.ok()) << ro.status().ToString();
    auto ks = (*ro)->GetKeyspace("ks").value();
    std::string got;
    Status st = ks->Get("key", &got);
    EXPECT_EQ(st.code(), StatusCode::kUnavailable)
        << st.ToString() << " " << got;
    EXPECT_NE(st.message().find("commit log holds 2 commits"),
              std::string::npos)
        << st.ToString();
    EXPECT_EQ(ks->ForEach([](const rf::RecordView&) { return true; }).code(),
              StatusCode::kUnavailable);
    CheckReport r = (*ro)->Check();
    EXPECT_TRUE(r.ok());
    bool noted = false;
    for (const auto& n : r.notes) noted |= n.find("replays them") != n.npos;
    EXPECT_TRUE(noted);
  }
  testing::TrackedPool reopened(image);
  {
    auto pool = reopened.Open();
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_TRUE(NoteHas(pool->get(), "replayed 1 puts and 1 deletes"));
    EXPECT_EQ(Read(pool->get(), "key"), "v2");
    EXPECT_EQ(Read(pool->get(), "gone"), kAbsent);
    CheckReport r = (*pool)->Check();
    EXPECT_TRUE(r.ok() && r.notes.empty());
  }
  // The replay is durable: lose power again at once.
  auto again = OpenImage(reopened.LoseUnpersisted());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Read(again->get(), "key"), "v2");
  EXPECT_EQ(Read(again->get(), "gone"), kAbsent);
  EXPECT_FALSE(NoteHas(again->get(), " puts and "));
}

// put, delete, then the tombstone's segment (and the put's) cleaned and
// granted again, their bytes rewritten: a recovery must never find the
// put's entry without the tombstone's, or the key comes back. Each grant
// checkpoints first (moving `start` past both entries).
TEST_F(CommitLogCrashTest, ADeletedKeyStaysDeletedWhenItsSegmentsAreReused) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("victim", "v1").ok());
  auto del = w.Delete("victim");
  ASSERT_TRUE(del.ok());
  const uint64_t tomb_segment =
      del->committed.log_offset / ks_->info().segment_size;
  bool reused = false;
  std::string filler(400, 'f');
  for (int round = 0; round < 40 && !reused; round++) {
    for (int i = 0; i < 12; i++) {
      auto put = w.Put("fill" + std::to_string(i), filler);
      if (put.status().IsNoSpace()) {
        ASSERT_TRUE(ks_->Clean(0.9).ok());
        put = w.Put("fill" + std::to_string(i), filler);
      }
      ASSERT_TRUE(put.ok()) << round << ": " << put.status().ToString();
    }
    (void)ks_->Clean(0.9);
    // Reused: the tombstone's bytes are gone (zeroed or overwritten).
    rf::RecordView view;
    reused = !rf::VerifyRecord(ks_->log_base() + del->committed.log_offset,
                               del->committed.length, ks_->id(), &view)
                  .ok();
    auto pool = OpenImage(tp_.LoseUnpersisted());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    ASSERT_EQ(Read(pool->get(), "victim"), kAbsent)
        << "round " << round << ", tombstone segment " << tomb_segment
        << (reused ? " reused" : "");
  }
  EXPECT_TRUE(reused) << "the tombstone's segment was never reused";
}

// The same for an index growth, which overwrites the log's first segments
// with buckets without a grant: a tombstone there (its segment otherwise
// dead) must not leave the older put's entry alone to be replayed.
TEST_F(CommitLogCrashTest, ADeletedKeyStaysDeletedWhenTheIndexGrowsOverIt) {
  // Segment 0 granted first, so that no grant comes between the put and
  // the delete below (a grant checkpoints).
  ks_->PreferSegmentForTesting(0);
  SegmentGrant front = ks_->GrantSegment().value();
  ASSERT_EQ(front.segment, 0u);
  Writer back(ks_);
  ASSERT_TRUE(back.Put("victim", "v1").ok());  // another segment
  // The delete's tombstone in segment 0, as a writer commits it.
  uint8_t* at = ks_->GrantBytes(front);
  CommitRequest del;
  del.segment = front.segment;
  del.grant_id = front.grant_id;
  del.offset = front.start;
  del.length = static_cast<uint32_t>(
      rf::EncodeRecord(at, ks_->id(), 0, /*tombstone=*/true, "victim", ""));
  del.key_hash = ix::HashKey("victim");
  del.op = CommitOp::kDelete;
  auto deleted = ks_->Commit(del);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  ASSERT_TRUE(deleted->had_previous);
  // Sealed with nothing live: segment 0 is free for the index.
  ASSERT_TRUE(ks_->SealSegment(front).ok());
  // 16 -> 32 buckets fit the index's first page; 32 -> 64 take segment 0.
  ASSERT_TRUE(ks_->GrowIndex().ok());
  Status st = ks_->GrowIndex();
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(ks_->Stats().index_buckets, 64u);
  auto pool = OpenImage(tp_.LoseUnpersisted());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(Read(pool->get(), "victim"), kAbsent);
}

// Thousands of updates of a few keys: lsns lap the ring many times
// (512 entries here). Every image after an acknowledged update holds
// every key's newest version.
TEST_F(CommitLogCrashTest, ARingThatWrappedKeepsEveryKeysNewestVersion) {
  ASSERT_EQ(ks_->info().commit_log_entries, 512u);
  Writer w(ks_);
  std::map<std::string, std::string> acked;
  for (int i = 0; i < 3000; i++) {
    const std::string key = "k" + std::to_string(i % 7);
    const std::string value = "v" + std::to_string(i);
    auto put = w.Put(key, value);
    if (put.status().IsNoSpace()) {  // a tiny log: clean, then again
      ASSERT_TRUE(ks_->Clean(0.9).ok());
      put = w.Put(key, value);
    }
    ASSERT_TRUE(put.ok()) << i << ": " << put.status().ToString();
    acked[key] = value;
    if (i % 499 != 0 && i != 2999) continue;
    auto pool = OpenImage(tp_.LoseUnpersisted());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    for (const auto& [k, v] : acked) {
      ASSERT_EQ(Read(pool->get(), k), v) << "after update " << i;
    }
    ASSERT_TRUE((*pool)->Check().ok());
  }
}

// 200 acknowledged puts, then one pipeline call of 600 more: it fills the
// 512-entry ring before any proactive checkpoint (those run after a call)
// and laps the first call's entries, whose buckets are not durable yet.
// The entry that would overwrite one a recovery still reads must wait for
// a checkpoint; at every persist point of the second call the first
// call's keys are all there.
TEST(CommitLogRingTest, AFullRingCheckpointsBeforeItOverwrites) {
  testing::TrackedPool tp(4 << 20);
  auto pool = tp.Create();
  ASSERT_TRUE(pool.ok());
  KeyspaceOptions o;
  o.index_capacity = 4096;
  o.segment_size = 64 << 10;  // holds every record of both calls
  o.log_size = 512 << 10;
  o.max_value_size = 1024;
  auto ks = (*pool)->CreateKeyspace("ks", o).value();
  ASSERT_EQ(ks->info().commit_log_entries, 512u);
  Writer w(ks);
  auto commit = [&](const std::string& prefix, int n) {
    for (int i = 0; i < n; i++) {
      ASSERT_TRUE(w.StagePut(prefix + std::to_string(i), "v").ok());
    }
    std::vector<Result<CommitResult>> results;
    w.CommitStaged(&results);
    ASSERT_EQ(results.size(), static_cast<size_t>(n));
    for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  commit("a", 200);
  const int points = testing::CrashEverywhere(
      &tp.tracker(), 1,
      [&](Pool* p, const testing::CrashPoint& at) {
        for (int i = 0; i < 200; i++) {
          ASSERT_EQ(Read(p, "a" + std::to_string(i)), "v")
              << at.ToString() << ", key a" << i;
        }
      },
      [&] { commit("b", 600); });
  EXPECT_GT(points, 10);
}

// Entries that lie, each past the checkpoint's start: none is replayed,
// the open does not fail, and the key keeps its committed version.
TEST_F(CommitLogCrashTest, EntriesThatLieAreNeverReplayed) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "v1").ok());
  Version v1;
  std::string got;
  ASSERT_TRUE(ks_->Get("key", &got, &v1).ok());
  ks_->PersistIndex();
  // A record of another keyspace id (a foreign one), written durably in
  // the log beyond the writer's tail, never committed.
  const KeyspaceInfo info = ks_->info();
  // Segment 3: free (grants take the highest free segment first).
  const uint64_t foreign_off = 3 * uint64_t{info.segment_size};
  uint8_t* foreign = ks_->log_base() + foreign_off;
  const size_t foreign_len =
      rf::EncodeRecord(foreign, ks_->id() + 1, 99, false, "key", "foreign");
  ks_->persister()->Persist(foreign, foreign_len);
  std::vector<uint8_t> image = tp_.LoseUnpersisted();
  const Ring ring = RingOf(&image);
  const uint64_t start = Start(ring);
  const uint64_t fp = ix::Fingerprint(ix::HashKey("key"));
  const uint64_t slot = ix::PackSlot(
      {static_cast<uint16_t>(fp), static_cast<uint16_t>(v1.length / ix::kUnit),
       static_cast<uint32_t>(v1.log_offset / ix::kUnit)});
  auto at = [&](uint64_t lsn) { return lsn % ring.count; };
  uint64_t lsn = start;
  // 1. Out of the log: offset units past its end.
  WriteEntry(ring, lsn,
             ix::PackSlot({static_cast<uint16_t>(fp), 1, 0xFFFFFFF0u}),
             v1.sequence + 5, 0, at(lsn));
  lsn++;
  // 2. The right record, a sequence of its choosing (newer than v1's).
  WriteEntry(ring, lsn, slot, v1.sequence + 7, 0, at(lsn));
  lsn++;
  // 3. The right record and sequence, said to be a tombstone.
  WriteEntry(ring, lsn, slot, v1.sequence, /*tombstone=*/1, at(lsn));
  lsn++;
  // 4. A torn CRC on an entry that would otherwise delete the key.
  WriteEntry(ring, lsn, slot, v1.sequence + 9, 1, at(lsn), /*good_crc=*/false);
  lsn++;
  // 5. An lsn not at its own ring position.
  WriteEntry(ring, lsn + 1, slot, v1.sequence + 11, 1, at(lsn));
  lsn++;
  // 6. An lsn below the checkpoint's start (an old lap's), and one a whole
  //    ring ahead of it.
  if (start > 0)
    WriteEntry(ring, start - 1, slot, v1.sequence, 1, at(start - 1));
  WriteEntry(ring, start + ring.count + 6, slot, v1.sequence + 13, 1,
             at(start + 6));
  // 7. The foreign keyspace's record, its sequence right.
  const uint64_t foreign_slot =
      ix::PackSlot({static_cast<uint16_t>(fp),
                    static_cast<uint16_t>(foreign_len / ix::kUnit),
                    static_cast<uint32_t>(foreign_off / ix::kUnit)});
  WriteEntry(ring, start + 7, foreign_slot, 99, 0, at(start + 7));
  // 8. Unknown flag bits.
  WriteEntry(ring, start + 8, slot, v1.sequence + 15, 0x80, at(start + 8));
  {
    auto ro = OpenImage(image, /*read_only=*/true);
    ASSERT_TRUE(ro.ok()) << ro.status().ToString();
    EXPECT_EQ(Read(ro->get(), "key"), "v1");
  }
  auto pool = OpenImage(image);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(Read(pool->get(), "key"), "v1");
  EXPECT_FALSE(NoteHas(pool->get(), " puts and "));
  // 1, 2, 3 and 7 verify as entries and name no committed record.
  EXPECT_TRUE(NoteHas(pool->get(), "4 commit log entries name no committed"));
  EXPECT_TRUE((*pool)->Check().ok());
}

// The checkpoint's two copies: one damaged, the other holds; both
// damaged, the open is refused (which entries to read is unknown).
TEST_F(CommitLogCrashTest, ADamagedCheckpointRefusesTheOpen) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "v1").ok());
  ks_->PersistIndex();
  std::vector<uint8_t> image = tp_.LoseUnpersisted();
  const Ring ring = RingOf(&image);
  ring.checkpoint[3] ^= 0x40;  // copy 0
  {
    auto pool = OpenImage(image);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ(Read(pool->get(), "key"), "v1");
  }
  ring.checkpoint[32 + 9] ^= 0x01;  // copy 1 too
  auto pool = OpenImage(image);
  ASSERT_FALSE(pool.ok());
  EXPECT_TRUE(pool.status().IsCorruption()) << pool.status().ToString();
  EXPECT_NE(pool.status().message().find("checkpoint is damaged"),
            std::string::npos)
      << pool.status().ToString();
}

}  // namespace
}  // namespace kv::store
