// Crash tests of the states random workloads rarely or never reach, each a
// way acknowledged data could be lost: an in-place update of a key whose
// 16 slots are taken, a cleaner victim granted again, power loss after a
// clean close, two unclean shutdowns in a row, duplicates across adjacent
// buckets, a regranted segment that still holds an older record of the
// same key at the same offset, and records a remote writer abandoned.
//
// Each test drives a fixed sequence on a tracked pool and builds crash
// images at every persist point of the operation under test and after it
// returns (CrashEverywhere), reopens them and checks every key. The
// mutation that each test catches is named in tests/mutation/patches/.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"

namespace kv::store {
namespace {

namespace ix = index_format;
namespace rf = record_format;
using testing::CrashEverywhere;
using testing::CrashPoint;
using testing::KeysWithHome;
using testing::OpenImage;
using testing::TinyKeyspace;
using testing::TrackedPool;

constexpr size_t kPoolSize = 1 << 20;
constexpr int kRandomImages = 24;
constexpr const char* kAbsent = "<absent>";

std::string Read(Keyspace* ks, const std::string& key) {
  std::string v;
  Status st = ks->Get(key, &v);
  if (st.IsNotFound()) return kAbsent;
  if (!st.ok()) return "<" + st.ToString() + ">";
  return v;
}

std::string Read(Pool* pool, const std::string& key) {
  auto ks = pool->GetKeyspace("ks");
  if (!ks.ok()) return "<no keyspace>";
  return Read(ks->get(), key);
}

uint64_t CountKeys(Pool* pool) {
  uint64_t n = 0;
  Status st = pool->GetKeyspace("ks").value()->ForEach(
      [&](const rf::RecordView&) { return ++n > 0; });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return n;
}

// Check() clean and iteration shows exactly `keys` keys.
void ExpectConsistent(Pool* pool, const CrashPoint& at, uint64_t keys) {
  CheckReport r = pool->Check();
  EXPECT_TRUE(r.ok()) << at.ToString() << ": " << r.problems[0];
  EXPECT_EQ(CountKeys(pool), keys) << at.ToString();
}

// Expects `key` to read as one of `allowed` (kAbsent for none).
void ExpectOneOf(Pool* pool, const CrashPoint& at, const std::string& key,
                 const std::set<std::string>& allowed) {
  const std::string got = Read(pool, key);
  EXPECT_TRUE(allowed.count(got)) << at.ToString() << ": '" << key
                                  << "' reads '" << got.substr(0, 24) << "'";
}

// Writes a record into a grant at `*tail`, as a remote writer does (with
// sequence 0, unless it forges one); `flush` makes it durable first (a
// client's persistent flush). Returns the commit request for it.
CommitRequest WriteRemote(Keyspace* ks, const SegmentGrant& g, uint64_t* tail,
                          const std::string& key, const std::string& value,
                          bool flush, uint64_t sequence = 0) {
  uint8_t* dst = ks->log_base() + g.log_offset + *tail;
  const size_t n = rf::EncodeRecord(dst, ks->id(), sequence, false, key, value);
  if (flush) ks->persister()->Persist(dst, n);
  CommitRequest r;
  r.segment = g.segment;
  r.grant_id = g.grant_id;
  r.offset = *tail;
  r.length = static_cast<uint32_t>(n);
  r.key_hash = ix::HashKey(key);
  *tail += n;
  return r;
}

class RareStateCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = tp_.Create();
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", TinyKeyspace());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
  }

  // Index position of the slot holding `key`'s current version.
  int64_t SlotIndexOf(const std::string& key) {
    Version v;
    std::string got;
    if (!ks_->Get(key, &got, &v).ok()) return -1;
    const Keyspace::Region r = ks_->region();
    const auto* slots =
        reinterpret_cast<const uint64_t*>(r.base + r.index_offset);
    for (uint64_t i = 0; i < r.index_size / 8; i++) {
      if (slots[i] != 0 && ix::SlotLogOffset(slots[i]) == v.log_offset) {
        return static_cast<int64_t>(i);
      }
    }
    return -1;
  }

  // Grants until `segment` comes back from the free list (segments that
  // come first are returned unused, or held when they were returned with
  // a tail, as those are always granted first).
  SegmentGrant RegrantSegment(uint32_t segment) {
    for (int i = 0; i < 32; i++) {
      auto g = ks_->GrantSegment();
      EXPECT_TRUE(g.ok()) << g.status().ToString();
      if (!g.ok()) break;
      if (g->segment == segment) return *g;
      if (g->start > 0) {
        held_.push_back(*g);
      } else {
        EXPECT_TRUE(ks_->ReturnSegment(*g).ok());
      }
    }
    ADD_FAILURE() << "segment " << segment << " was not granted again";
    return {};
  }

  TrackedPool tp_{kPoolSize};
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
  std::vector<SegmentGrant> held_;
};

// All 16 slots of the key's two buckets are taken, so an update replaces
// the slot in place: the record must be durable before the slot points at
// it, and both before the put returns.
TEST_F(RareStateCrashTest, InPlaceUpdateWhenAllSixteenSlotsAreTaken) {
  const std::vector<std::string> keys = KeysWithHome(5, 17);
  Writer w(ks_);
  for (int i = 0; i < 16; i++) {
    ASSERT_TRUE(w.Put(keys[i], "v1-" + keys[i]).ok());
  }
  // The state: a 17th key of the same buckets finds no slot.
  ASSERT_TRUE(w.Put(keys[16], "x").status().IsNoSpace());
  const std::string key = keys[3];
  const int64_t before = SlotIndexOf(key);
  ASSERT_GE(before, 0);
  const std::string v2(700, 'n');
  const int points = CrashEverywhere(
      &tp_.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        for (int i = 0; i < 16; i++) {
          const std::string old = "v1-" + keys[i];
          if (keys[i] != key) {
            ExpectOneOf(p, at, keys[i], {old});
          } else if (at.after) {
            ExpectOneOf(p, at, key, {v2});
          } else {
            ExpectOneOf(p, at, key, {old, v2});
          }
        }
        ExpectConsistent(p, at, 16);
      },
      [&] { ASSERT_TRUE(w.Put(key, v2).ok()); });
  EXPECT_EQ(SlotIndexOf(key), before) << "not replaced in place";
  EXPECT_EQ(points, 2);  // record, then slot
  EXPECT_EQ(Read(ks_.get(), key), v2);
}

// The cleaner moves the only live record out of a sealed segment; the
// segment is freed and granted again (zeroed). The slot's switch to the
// copy must be durable before that, or a crash leaves the slot pointing at
// zeros and recovery drops the key. No later commit touches the key's
// buckets, so nothing else persists the switch by chance.
TEST_F(RareStateCrashTest, ACleanerVictimIsReusedOnlyAfterItsSlotsMoved) {
  const std::string cold = KeysWithHome(2, 1, 16, "cold")[0];
  const std::string hot = KeysWithHome(9, 1, 16, "hot")[0];
  Writer w(ks_);
  ASSERT_TRUE(w.Put(cold, "cold value").ok());
  Version v;
  std::string got;
  ASSERT_TRUE(ks_->Get(cold, &got, &v).ok());
  const uint32_t victim = static_cast<uint32_t>(v.log_offset / (8 * 1024));
  std::string last;
  for (int i = 0; i < 40; i++) {
    last = std::string(300, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(w.Put(hot, last).ok());
  }
  ASSERT_TRUE(w.Close().ok());
  // The victim is sealed with only `cold` live in it.
  CrashEverywhere(
      &tp_.tracker(), kRandomImages / 2,
      [&](Pool* p, const CrashPoint& at) {
        ExpectOneOf(p, at, cold, {"cold value"});
        ExpectOneOf(p, at, hot, {last});
        ExpectConsistent(p, at, 2);
      },
      [&] {
        auto cleaned = ks_->Clean(0.5, 8);
        ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
        ASSERT_EQ(*cleaned, 1u);
        ASSERT_TRUE(ks_->Get(cold, &got, &v).ok());
        ASSERT_NE(v.log_offset / (8 * 1024), victim);  // moved
        RegrantSegment(victim);
      });
  EXPECT_EQ(Read(ks_.get(), cold), "cold value");
}

// Lifecycle: writes, a clean close, a reopen (every segment that holds
// data comes back sealed), the cleaner over all of them, every free
// segment granted again (zeroed) — with crashes at every persist point of
// the cleaning and regranting and after it.
TEST_F(RareStateCrashTest, CleanCloseThenCleanerThenRegrantThenCrash) {
  std::map<std::string, std::string> want;
  {
    Writer w(ks_);
    for (int i = 0; i < 60; i++) {
      const std::string k = "key" + std::to_string(i % 12);
      want[k] = std::to_string(i) + std::string(200, 'v');
      ASSERT_TRUE(w.Put(k, want[k]).ok());
    }
  }
  ks_.reset();
  pool_.reset();  // clean close
  auto pool = tp_.Open();
  ASSERT_TRUE(pool.ok());
  ASSERT_TRUE((*pool)->Info().recovery_notes.empty());
  ks_ = (*pool)->GetKeyspace("ks").value();
  CrashEverywhere(
      &tp_.tracker(), 4,
      [&](Pool* p, const CrashPoint& at) {
        for (const auto& [k, v] : want) ExpectOneOf(p, at, k, {v});
        ExpectConsistent(p, at, want.size());
      },
      [&] {
        auto cleaned = ks_->Clean(0.9, 8);
        ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
        ASSERT_GE(*cleaned, 1u);
        for (int i = 0; i < 10; i++) {
          auto g = ks_->GrantSegment();
          ASSERT_TRUE(g.ok()) << g.status().ToString();
          if (g->start > 0) {
            held_.push_back(*g);
          } else {
            ASSERT_TRUE(ks_->ReturnSegment(*g).ok());
          }
        }
      });
  for (const auto& [k, v] : want) EXPECT_EQ(Read(ks_.get(), k), v);
  ks_.reset();
}

// A clean close persists the whole index (an update's old slot was cleared
// without a persist) and then marks the keyspace clean, so the next open
// repairs nothing. Power lost during or after the close must not revive
// the old slot — nor let a later delete leave the old value visible.
TEST_F(RareStateCrashTest, PowerLossDuringAndAfterACleanClose) {
  {
    Writer w(ks_);
    ASSERT_TRUE(w.Put("a", "a1").ok());
    ASSERT_TRUE(w.Put("a", "a2").ok());  // a1's slot clear is not persisted
    ASSERT_TRUE(w.Put("b", "b1").ok());
  }
  ks_.reset();
  CrashEverywhere(
      &tp_.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        if (at.after) {
          EXPECT_TRUE(p->Info().recovery_notes.empty())
              << at.ToString()
              << ": a clean pool was repaired: " << p->Info().recovery_notes[0];
        }
        ExpectOneOf(p, at, "a", {"a2"});
        ExpectOneOf(p, at, "b", {"b1"});
        ExpectConsistent(p, at, 2);
        Writer w(p->GetKeyspace("ks").value());
        EXPECT_TRUE(w.Delete("a").ok());
        ExpectOneOf(p, at, "a", {kAbsent});
        EXPECT_EQ(CountKeys(p), 1u) << at.ToString();
      },
      [&] { pool_.reset(); });
  // And the pool reopens clean on the same bytes.
  auto pool = tp_.Open();
  ASSERT_TRUE(pool.ok());
  EXPECT_TRUE((*pool)->Info().recovery_notes.empty());
  EXPECT_EQ(Read(pool->get(), "a"), "a2");
}

// crash -> open -> write -> crash -> open -> update -> crash: each open's
// epoch bump must be durable before its sequences are used, or the third
// open hands out sequences the second used, an update gets a lower
// sequence than the version it replaced, and recovery keeps the old one.
TEST_F(RareStateCrashTest, TwoUncleanShutdownsInARowKeepTheLatestUpdate) {
  {
    Writer w(ks_);
    for (int i = 0; i < 5; i++) {
      ASSERT_TRUE(w.Put("key", "first-open-" + std::to_string(i)).ok());
    }
  }
  TrackedPool second(tp_.LoseUnpersisted());  // crash 1
  std::vector<uint8_t> crash2;
  {
    auto pool = second.Open();
    ASSERT_TRUE(pool.ok());
    ASSERT_EQ(Read(pool->get(), "key"), "first-open-4");
    Writer w((*pool)->GetKeyspace("ks").value());
    for (int i = 0; i < 5; i++) {
      ASSERT_TRUE(w.Put("key", "second-open-" + std::to_string(i)).ok());
    }
    crash2 = second.LoseUnpersisted();  // crash 2
  }
  TrackedPool third(crash2);
  auto pool = third.Open();
  ASSERT_TRUE(pool.ok());
  ASSERT_EQ(Read(pool->get(), "key"), "second-open-4");
  Writer w((*pool)->GetKeyspace("ks").value());
  CrashEverywhere(
      &third.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        if (at.after) {
          ExpectOneOf(p, at, "key", {"third-open"});
        } else {
          ExpectOneOf(p, at, "key", {"second-open-4", "third-open"});
        }
        ExpectConsistent(p, at, 1);
      },
      [&] { ASSERT_TRUE(w.Put("key", "third-open").ok()); });
}

// An update whose home bucket is full lands in the next bucket; a crash
// before its old slot's clear is durable leaves the key in two adjacent
// buckets. A read-only open reports it (Check, independently of the
// repair), a writable one repairs it.
TEST_F(RareStateCrashTest, DuplicatesAcrossAdjacentBucketsAreRepaired) {
  const std::vector<std::string> keys = KeysWithHome(3, 8);
  Writer w(ks_);
  for (const auto& k : keys) ASSERT_TRUE(w.Put(k, "v1").ok());
  const std::string& key = keys.back();
  ASSERT_EQ(SlotIndexOf(key) / 8, 3);
  ASSERT_TRUE(w.Put(key, "v2").ok());
  ASSERT_EQ(SlotIndexOf(key) / 8, 4);  // the next bucket
  const std::vector<uint8_t> image = tp_.LoseUnpersisted();
  {
    auto ro = OpenImage(image, /*read_only=*/true);
    ASSERT_TRUE(ro.ok());
    EXPECT_EQ(Read(ro->get(), key), "v2");
    CheckReport r = (*ro)->Check();
    EXPECT_TRUE(r.ok());
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("holds a key that"), std::string::npos)
        << r.notes[0];
  }
  TrackedPool reopened(image);
  auto pool = reopened.Open();
  ASSERT_TRUE(pool.ok());
  const auto notes = (*pool)->Info().recovery_notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("an older version of the key"), std::string::npos);
  CheckReport r = (*pool)->Check();
  EXPECT_TRUE(r.ok() && r.notes.empty());
  EXPECT_EQ(CountKeys(pool->get()), 8u);
  Writer w2((*pool)->GetKeyspace("ks").value());
  CrashEverywhere(
      &reopened.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        ExpectOneOf(p, at, key,
                    at.after ? std::set<std::string>{kAbsent}
                             : std::set<std::string>{"v2", kAbsent});
        ExpectConsistent(p, at, Read(p, key) == kAbsent ? 7 : 8);
      },
      [&] { ASSERT_TRUE(w2.Delete(key).ok()); });
  EXPECT_EQ(Read(pool->get(), key), kAbsent);
}

// A segment is zeroed when it is granted again. Here it still holds the
// deleted key's record at offset 0, and the next record written there is
// the same key with the same length: if the zeros were skipped, a torn
// commit (slot durable, record not) would read as the deleted value.
TEST_F(RareStateCrashTest, ARegrantedSegmentNeverShowsAnOlderRecord) {
  const std::string key = KeysWithHome(2, 1)[0];
  const std::string hot = KeysWithHome(9, 1, 16, "hot")[0];
  Writer w(ks_);
  ASSERT_TRUE(w.Put(key, "deleted-value").ok());
  Version v;
  std::string got;
  ASSERT_TRUE(ks_->Get(key, &got, &v).ok());
  ASSERT_EQ(v.log_offset % (8 * 1024), 0u);
  const uint32_t seg = static_cast<uint32_t>(v.log_offset / (8 * 1024));
  ASSERT_TRUE(w.Delete(key).ok());
  std::string last;
  for (int i = 0; i < 40; i++) {
    last = std::string(300, static_cast<char>('a' + i % 26));
    ASSERT_TRUE(w.Put(hot, last).ok());
  }
  ASSERT_TRUE(w.Close().ok());
  const SegmentGrant g = RegrantSegment(seg);
  ASSERT_EQ(g.start, 0u);
  CrashEverywhere(
      &tp_.tracker(), 64,
      [&](Pool* p, const CrashPoint& at) {
        ExpectOneOf(p, at, key,
                    at.after ? std::set<std::string>{"reborn-value"}
                             : std::set<std::string>{kAbsent, "reborn-value"});
        ExpectOneOf(p, at, hot, {last});
        ExpectConsistent(p, at, Read(p, key) == kAbsent ? 1 : 2);
      },
      [&] {
        uint64_t tail = 0;
        const CommitRequest r =
            WriteRemote(ks_.get(), g, &tail, key, "reborn-value", false);
        ASSERT_EQ(r.length, v.length);
        ASSERT_TRUE(ks_->Commit(r).ok());
      });
}

// An update clears its key's old slot without persisting it; the grant
// that reuses the segment the old slot pointed into must persist that
// clear first. Here nothing else persists the old slot's bucket before the
// segment is granted again, and a remote writer then leaves, at the old
// slot's offset, a record of the same key and length with a sequence it
// forged above the key's: a revived old slot would make it the key's
// newest version.
TEST_F(RareStateCrashTest, AnUpdatesOldSlotIsClearedBeforeItsSegmentIsReused) {
  const std::string key = KeysWithHome(6, 1)[0];
  SegmentGrant g = ks_->GrantSegment().value();
  uint64_t tail = g.start;
  const CommitRequest r1 =
      WriteRemote(ks_.get(), g, &tail, key, "value-1", true);
  ASSERT_TRUE(ks_->Commit(r1).ok());
  ASSERT_TRUE(ks_->SealSegment(g).ok());
  {
    Writer w(ks_);
    ASSERT_TRUE(w.Put(key, "value-2").ok());  // the segment is now dead
  }
  CrashEverywhere(
      &tp_.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        ExpectOneOf(p, at, key, {"value-2"});
        ExpectConsistent(p, at, 1);
      },
      [&] {
        const SegmentGrant again = RegrantSegment(g.segment);
        ASSERT_EQ(again.start, 0u);
        uint64_t t = 0;
        const CommitRequest forged =
            WriteRemote(ks_.get(), again, &t, key, "forged!", true,
                        (uint64_t{9} << Keyspace::kEpochShift) + 1);
        ASSERT_EQ(forged.offset, r1.offset);
        ASSERT_EQ(forged.length, r1.length);
        ASSERT_TRUE(ks_->SealSegment(again).ok());  // the writer left
      });
}

// Recovery clears a slot whose record a crash left torn; that clear must
// be durable before the segment the slot pointed into is reused. Here the
// torn slot points into a free segment; after the repair that segment is
// granted again and a remote writer leaves, at the torn slot's offset, a
// record of the same key and length with a forged sequence. A repair that
// was not persisted revives the slot at the next crash, over that record.
TEST_F(RareStateCrashTest, ARepairIsDurableBeforeItsSegmentIsReused) {
  const std::string key = KeysWithHome(11, 1)[0];
  {
    Writer w(ks_);
    ASSERT_TRUE(w.Put(key, "value-1").ok());
  }
  const KeyspaceInfo info = ks_->info();
  const uint32_t free_seg = 5;
  const uint64_t len = rf::RecordSize(key.size(), 7);
  std::vector<uint8_t> image = tp_.LoseUnpersisted();
  {
    // The torn commit: a durable slot of the key whose record (in a
    // segment nothing else uses) never reached media.
    auto* slots =
        reinterpret_cast<uint64_t*>(image.data() + info.region_offset) +
        11 * ix::kSlotsPerBucket;
    int i = 0;
    while (slots[i] != 0) i++;
    slots[i] =
        ix::PackSlot({ix::Fingerprint(ix::HashKey(key)),
                      static_cast<uint16_t>(len / ix::kUnit),
                      static_cast<uint32_t>(uint64_t{free_seg} *
                                            info.segment_size / ix::kUnit)});
  }
  TrackedPool reopened(image);
  auto pool = reopened.Open();
  ASSERT_TRUE(pool.ok());
  ASSERT_EQ((*pool)->Info().recovery_notes.size(), 1u);
  ks_ = (*pool)->GetKeyspace("ks").value();
  CrashEverywhere(
      &reopened.tracker(), kRandomImages,
      [&](Pool* p, const CrashPoint& at) {
        ExpectOneOf(p, at, key, {"value-1"});
        ExpectConsistent(p, at, 1);
      },
      [&] {
        const SegmentGrant g = RegrantSegment(free_seg);
        ASSERT_EQ(g.start, 0u);
        uint64_t t = 0;
        const CommitRequest forged =
            WriteRemote(ks_.get(), g, &t, key, "forged!", true,
                        (uint64_t{9} << Keyspace::kEpochShift) + 1);
        ASSERT_EQ(forged.length, len);
        ASSERT_TRUE(ks_->SealSegment(g).ok());  // the writer left
      });
  ks_.reset();
}

// A remote writer writes (and flushes) records into its grant and goes
// away without committing them; the segment is returned (granted again
// from its tail) or sealed. The abandoned records — one the same key and
// length as a committed one, with a sequence the writer forged (a buggy
// or hostile client) — are never read as versions, and a later commit of
// that key over a returned one's bytes is all-or-nothing: the grant's
// zeros, not the forged record, show through a torn commit.
TEST_F(RareStateCrashTest, AbandonedRemoteRecordsAreNeverVersions) {
  for (bool seal : {false, true}) {
    SCOPED_TRACE(seal ? "sealed" : "returned");
    const std::string key = seal ? "sealed-key" : "returned-key";
    SegmentGrant g = ks_->GrantSegment().value();
    uint64_t tail = g.start;
    ASSERT_TRUE(
        ks_->Commit(WriteRemote(ks_.get(), g, &tail, key, "committed-1", true))
            .ok());
    const uint64_t abandoned_at = tail;
    WriteRemote(ks_.get(), g, &tail, key, "abandoned-1", true,
                (uint64_t{7} << Keyspace::kEpochShift) + 1);
    WriteRemote(ks_.get(), g, &tail, "other", "abandoned", true);
    ASSERT_TRUE(seal ? ks_->SealSegment(g).ok() : ks_->ReturnSegment(g).ok());
    const uint64_t keys = seal ? 2 : 1;
    CrashEverywhere(
        &tp_.tracker(), kRandomImages,
        [&](Pool* p, const CrashPoint& at) {
          ExpectOneOf(p, at, key, {"committed-1"});
          ExpectOneOf(p, at, "other", {kAbsent});
          ExpectConsistent(p, at, keys);
        },
        [] {});
    if (seal) continue;
    // Granted again from the tail: the abandoned bytes are zero, and a new
    // commit at the abandoned record's offset shows old or new.
    SegmentGrant again = ks_->GrantSegment().value();
    ASSERT_EQ(again.segment, g.segment);
    ASSERT_EQ(again.start, abandoned_at);
    const uint8_t* seg = ks_->log_base() + again.log_offset;
    for (uint64_t i = again.start; i < again.size; i++) {
      ASSERT_EQ(seg[i], 0) << "byte " << i;
    }
    uint64_t t2 = again.start;
    // Not flushed first (a client on a file pool only orders): a torn
    // commit shows whatever is durable under it — the grant's zeros.
    const CommitRequest r =
        WriteRemote(ks_.get(), again, &t2, key, "committed-2", false);
    CrashEverywhere(
        &tp_.tracker(), kRandomImages,
        [&](Pool* p, const CrashPoint& at) {
          ExpectOneOf(
              p, at, key,
              at.after ? std::set<std::string>{"committed-2"}
                       : std::set<std::string>{"committed-1", "committed-2"});
          ExpectConsistent(p, at, 1);
        },
        [&] { ASSERT_TRUE(ks_->Commit(r).ok()); });
    ASSERT_TRUE(ks_->SealSegment(again).ok());
  }
}

}  // namespace
}  // namespace kv::store
