// Crash tests of segment reuse, the states random workloads rarely reach:
// a cleaner victim granted again, a regranted segment that still held an
// older record of the same key at the same offset, an update's old slot
// and a recovery repair that must be durable before their segment is
// rewritten, records a remote writer abandoned (with sequence 0, and
// forged), and clean close -> reopen -> cleaner -> regrant -> crash.
//
// As in rare_state_crash_test.cc: crash images at every persist point of
// the operation under test and after it returns, reopened and checked.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "rare_state_fixture.h"

namespace kv::store {
namespace {

namespace ix = index_format;
namespace rf = record_format;
using testing::CountKeys;
using testing::CrashEverywhere;
using testing::CrashPoint;
using testing::ExpectConsistent;
using testing::ExpectOneOf;
using testing::kAbsent;
using testing::KeysWithHome;
using testing::kRandomImages;
using testing::OpenImage;
using testing::Read;
using testing::TrackedPool;
using testing::WriteRemote;

// The parameter: keyspaces with a commit log (format 4: a grant
// checkpoints) or without (format 3: a grant persists the deferred clears).
class SegmentReuseCrashTest : public testing::TrackedKeyspaceTest,
                              public ::testing::WithParamInterface<bool> {
  KeyspaceOptions Options() const override {
    KeyspaceOptions o = testing::TinyKeyspace();
    o.commit_log = GetParam();
    return o;
  }
};

// The cleaner moves the only live record out of a sealed segment; the
// segment is freed and granted again (zeroed). The slot's switch to the
// copy must be durable before that, or a crash leaves the slot pointing at
// zeros and recovery drops the key. No later commit touches the key's
// buckets, so nothing else persists the switch by chance.
TEST_P(SegmentReuseCrashTest, ACleanerVictimIsReusedOnlyAfterItsSlotsMoved) {
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
TEST_P(SegmentReuseCrashTest, CleanCloseThenCleanerThenRegrantThenCrash) {
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

// A segment is zeroed when it is granted again. Here it still holds the
// deleted key's record at offset 0, and the next record written there is
// the same key with the same length: if the zeros were skipped, a torn
// commit (slot durable, record not) would read as the deleted value.
TEST_P(SegmentReuseCrashTest, ARegrantedSegmentNeverShowsAnOlderRecord) {
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
TEST_P(SegmentReuseCrashTest,
       AnUpdatesOldSlotIsClearedBeforeItsSegmentIsReused) {
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
TEST_P(SegmentReuseCrashTest, ARepairIsDurableBeforeItsSegmentIsReused) {
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
        reinterpret_cast<uint64_t*>(image.data() + info.index_offset) +
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
  // The torn slot's repair (with a commit log, the put's entry is also
  // replayed: its bucket was never persisted).
  int cleared = 0;
  for (const std::string& n : (*pool)->Info().recovery_notes) {
    cleared += n.find("a commit the crash interrupted") != std::string::npos;
  }
  ASSERT_EQ(cleared, 1);
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
TEST_P(SegmentReuseCrashTest, AbandonedRemoteRecordsAreNeverVersions) {
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

INSTANTIATE_TEST_SUITE_P(Formats, SegmentReuseCrashTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "CommitLog" : "NoCommitLog";
                         });

}  // namespace
}  // namespace kv::store
