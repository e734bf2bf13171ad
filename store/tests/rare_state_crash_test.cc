// Crash tests of index states the random workloads rarely or never
// reach, each a way acknowledged data could be lost: an in-place update of
// a key whose 16 slots are taken, power loss during and after a clean
// close, two unclean shutdowns in a row, duplicates across adjacent
// buckets. (Segment reuse: segment_reuse_crash_test.cc.)
//
// Each test drives a fixed sequence on a tracked pool and builds crash
// images at every persist point of the operation under test and after it
// returns (CrashEverywhere), reopens them and checks every key. The
// mutation each test catches is in tests/mutation/patches/ (store/README).
#include <gtest/gtest.h>

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

class RareStateCrashTest : public testing::TrackedKeyspaceTest {};
// The same on a keyspace without a commit log (format 3), whose commit
// point persists its buckets: the states below are what it leaves.
class Format3RareStateCrashTest : public RareStateCrashTest {
  KeyspaceOptions Options() const override {
    KeyspaceOptions o = testing::TinyKeyspace();
    o.commit_log = false;
    return o;
  }
};

// All 16 slots of the key's two buckets are taken, so an update replaces
// the slot in place: the record must be durable before the slot points at
// it, and both before the put returns.
TEST_F(RareStateCrashTest, InPlaceUpdateWhenAllSixteenSlotsAreTaken) {
  const std::vector<std::string> keys = KeysWithHome(5, 17);
  testing::RefuseIndexGrowth(ks_.get());
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
// buckets (format 3: the new slot is durable at the commit point; with a
// commit log the new slot is its entry, CommitLogCrashTest). A read-only
// open reports it (Check, independently of the repair), a writable one
// repairs it.
TEST_F(Format3RareStateCrashTest, DuplicatesAcrossAdjacentBucketsAreRepaired) {
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

}  // namespace
}  // namespace kv::store
