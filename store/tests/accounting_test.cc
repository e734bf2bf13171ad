// Live-byte accounting on updates (length changes, the in-place path of a
// full neighbourhood, deletes), segments drained, cleaned and granted
// again, and the cleaner racing deletes: Stats().live_bytes is the sum of
// the live records' padded sizes, no segment is freed (and zeroed by its
// next grant) while a live record is in it, and the cleaner resurrects
// nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace rf = kv::record_format;
using testing::NoGrace;
using testing::RefuseIndexGrowth;
using testing::SmallKeyspace;

// w.Put, running the cleaner while the log is full (bounded).
Status PutCleaning(Keyspace* ks, Writer* w, const std::string& k,
                   const std::string& v) {
  for (int attempt = 0; attempt < 20; attempt++) {
    Result<CommitResult> r = w->Put(k, v);
    if (r.ok() || !r.status().IsNoSpace()) return r.status();
    (void)w->Close();  // its segment becomes sealed: cleanable
    Result<uint32_t> c = ks->Clean(0.99, 64);
    if (!c.ok() && !c.status().IsNoSpace()) return c.status();
  }
  return Status::NoSpace("still full after 20 cleaner runs");
}

class AccountingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool =
        Pool::CreateOn(MemoryMapping::Zeroed(8 << 20, nullptr), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
  }
  std::shared_ptr<Keyspace> Create(const std::string& name,
                                   const KeyspaceOptions& o) {
    auto ks = pool_->CreateKeyspace(name, o);
    EXPECT_TRUE(ks.ok()) << ks.status().ToString();
    return ks.ok() ? *ks : nullptr;
  }
  // Stats match `want` exactly (keys, live bytes), every key reads its
  // value, and Check() is clean.
  void ExpectExactly(const Keyspace& ks,
                     const std::map<std::string, std::string>& want,
                     const std::string& when) {
    uint64_t live = 0;
    for (const auto& [k, v] : want) live += rf::RecordSize(k.size(), v.size());
    KeyspaceStats s = ks.Stats();
    EXPECT_EQ(s.keys, want.size()) << when;
    EXPECT_EQ(s.live_bytes, live) << when;
    for (const auto& [k, v] : want) {
      std::string got;
      Status st = ks.Get(k, &got);
      ASSERT_TRUE(st.ok()) << when << ": " << k << ": " << st.ToString();
      ASSERT_EQ(got, v) << when << ": " << k;
    }
    CheckReport report = pool_->Check();
    EXPECT_TRUE(report.ok()) << when << ": " << report.problems.front();
  }

  std::unique_ptr<Pool> pool_;
};

// Catches: an update's accounting removing the new record's length
// instead of the old one's (either commit path), a delete not removing
// the old record's bytes, a delete of an absent key removing some.
TEST_F(AccountingTest, UpdatesThatChangeLengthKeepLiveBytesExact) {
  auto ks = Create("ks", SmallKeyspace());
  ASSERT_NE(ks, nullptr);
  Writer w(ks);
  std::map<std::string, std::string> want;
  const size_t lengths[] = {10, 3000, 10, 0, 700, 7000, 1};
  for (size_t n : lengths) {
    want["k"] = std::string(n, 'k');
    ASSERT_TRUE(w.Put("k", want["k"]).ok());
    ExpectExactly(*ks, want, "k at " + std::to_string(n));
    want["other" + std::to_string(n)] = std::string(n / 2, 'o');
    ASSERT_TRUE(
        w.Put("other" + std::to_string(n), want["other" + std::to_string(n)])
            .ok());
  }
  ExpectExactly(*ks, want, "after the updates");
  ASSERT_TRUE(w.Delete("k").ok());
  want.erase("k");
  ExpectExactly(*ks, want, "after deleting k");
  ASSERT_TRUE(w.Delete("other7000").ok());  // a big record, a small tombstone
  want.erase("other7000");
  ExpectExactly(*ks, want, "after deleting other7000");
  auto r = w.Delete("never-there");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->had_previous);
  ExpectExactly(*ks, want, "after deleting an absent key");
  ASSERT_TRUE(w.Put("k", "back").ok());
  want["k"] = "back";
  ExpectExactly(*ks, want, "k put again");
}

// The in-place path: all 16 slots of the only neighbourhood taken, so an
// update replaces its slot in place (record persist, then slot persist).
// Catches: that path's RemoveLive of the wrong length, or missing.
TEST_F(AccountingTest, InPlaceUpdatesOfAFullNeighbourhoodKeepLiveBytesExact) {
  KeyspaceOptions o = SmallKeyspace();
  o.index_capacity = 4;  // one bucket (+1 probe bucket): 16 slots
  auto ks = Create("full", o);
  ASSERT_NE(ks, nullptr);
  RefuseIndexGrowth(ks.get());
  Writer w(ks);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 16; i++) {
    const std::string k = "key" + std::to_string(i);
    want[k] = std::string(20 + i, 'a');
    ASSERT_TRUE(w.Put(k, want[k]).ok()) << k;
  }
  ASSERT_TRUE(w.Put("key16", "x").status().IsNoSpace())
      << "the neighbourhood must be full for the in-place path";
  ExpectExactly(*ks, want, "full");
  const size_t lengths[] = {2000, 5, 900, 0, 4000, 33};
  for (size_t n : lengths) {
    for (int i = 0; i < 16; i += 5) {
      const std::string k = "key" + std::to_string(i);
      want[k] = std::string(n + i, static_cast<char>('b' + i));
      ASSERT_TRUE(w.Put(k, want[k]).ok()) << k;
    }
    ExpectExactly(*ks, want, "in place at " + std::to_string(n));
  }
  // A delete frees a slot: the next update takes the ordinary path.
  ASSERT_TRUE(w.Delete("key3").ok());
  want.erase("key3");
  ExpectExactly(*ks, want, "after a delete");
  want["key0"] = std::string(1234, 'z');
  ASSERT_TRUE(w.Put("key0", want["key0"]).ok());
  ExpectExactly(*ks, want, "update with a free slot");
}

// Every key updated over and over (lengths changing, some deleted and put
// again), the cleaner run between rounds: old segments drain, are freed and
// granted again (zeroed) many times over (the log is 16 segments, far less
// than what is written). Catches: a segment freed while a live record is
// in it (live bytes counted too low, e.g. by any of the mutants above):
// its next grant zeroes the record and the key no longer reads.
void DrainAndReuse(Keyspace* ks, int nkeys,
                   std::map<std::string, std::string>* want) {
  Writer w(std::shared_ptr<Keyspace>(ks, [](Keyspace*) {}));
  uint64_t grants_seen = 0;
  for (int round = 0; round < 40; round++) {
    for (int i = 0; i < nkeys; i++) {
      const std::string k = "key" + std::to_string(i);
      if (round % 4 == 1 && i % 5 == 0 && want->count(k)) {
        ASSERT_TRUE(w.Delete(k).ok()) << k;
        want->erase(k);
        continue;
      }
      const std::string v(
          static_cast<size_t>(50 + (i * 37 + round * 53) % 1500),
          static_cast<char>('a' + round % 26));
      Status st = PutCleaning(ks, &w, k, v);
      ASSERT_TRUE(st.ok()) << "round " << round << " " << k << ": "
                           << st.ToString();
      (*want)[k] = v;
    }
    Result<uint32_t> c = ks->Clean(0.9, 64);
    ASSERT_TRUE(c.ok() || c.status().IsNoSpace()) << c.status().ToString();
    if (c.ok()) grants_seen += *c;
    KeyspaceStats s = ks->Stats();
    uint64_t live = 0;
    for (const auto& [k, v] : *want) live += rf::RecordSize(k.size(), v.size());
    ASSERT_EQ(s.live_bytes, live) << "round " << round;
    ASSERT_EQ(s.keys, want->size()) << "round " << round;
    for (const auto& [k, v] : *want) {
      std::string got;
      Status st = ks->Get(k, &got);
      ASSERT_TRUE(st.ok()) << "round " << round << " " << k << ": "
                           << st.ToString();
      ASSERT_EQ(got, v) << "round " << round << " " << k;
    }
  }
  EXPECT_GT(grants_seen, 16u) << "segments must have been cleaned (and so "
                                 "granted again) more often than there are";
}

TEST_F(AccountingTest, DrainedSegmentsAreFreedOnlyWhenNothingLiveIsLeft) {
  auto ks = Create("ks", SmallKeyspace());
  ASSERT_NE(ks, nullptr);
  std::map<std::string, std::string> want;
  DrainAndReuse(ks.get(), 30, &want);
  ExpectExactly(*ks, want, "at the end");
}

TEST_F(AccountingTest, DrainedSegmentsOfInPlaceUpdatesAreFreedOnlyWhenEmpty) {
  KeyspaceOptions o = SmallKeyspace();
  o.index_capacity = 4;  // 16 slots: every update with 16 keys is in place
  auto ks = Create("full", o);
  ASSERT_NE(ks, nullptr);
  std::map<std::string, std::string> want;
  DrainAndReuse(ks.get(), 16, &want);
  ExpectExactly(*ks, want, "at the end");
}

// One thread runs the cleaner without pause while another deletes and
// puts again keys whose records sit in the victims. Catches: the cleaner
// switching a slot it did not re-check under the key's lock (MoveRecord's
// `slot != old_value` test): a deleted key comes back, an updated key
// reverts to the copied older value.
TEST_F(AccountingTest, CleanerRacingDeletesResurrectsNothing) {
  auto ks = Create("ks", SmallKeyspace());
  ASSERT_NE(ks, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> cleaned{0};
  std::thread cleaner([&] {
    while (!stop.load()) {
      Result<uint32_t> c = ks->Clean(0.95, 8);
      if (c.ok()) cleaned += *c;
    }
  });
  std::map<std::string, std::string> want;
  std::map<std::string, bool> deleted;
  constexpr int kKeys = 24;
  {
    Writer w(ks);
    uint32_t rng = 12345;
    for (int op = 0; op < 20000 && !HasFailure(); op++) {
      rng = rng * 1103515245u + 12345u;
      const std::string k = "key" + std::to_string((rng >> 8) % kKeys);
      if (want.count(k) && (rng >> 20) % 3 == 0) {
        Result<CommitResult> r = w.Delete(k);
        for (int i = 0; i < 1000 && !r.ok() && r.status().IsNoSpace(); i++) {
          std::this_thread::yield();
          r = w.Delete(k);
        }
        ASSERT_TRUE(r.ok()) << op << " " << k << ": " << r.status().ToString();
        EXPECT_TRUE(r->had_previous) << op << " " << k;
        want.erase(k);
        deleted[k] = true;
        continue;
      }
      const std::string v =
          std::to_string(op) + std::string(100 + (rng >> 12) % 400, 'v');
      Result<CommitResult> r = w.Put(k, v);
      for (int i = 0; i < 1000 && !r.ok() && r.status().IsNoSpace(); i++) {
        (void)w.Close();  // sealed: the cleaner may take it
        std::this_thread::yield();
        r = w.Put(k, v);
      }
      ASSERT_TRUE(r.ok()) << op << " " << k << ": " << r.status().ToString();
      want[k] = v;
      deleted[k] = false;
    }
  }
  stop = true;
  cleaner.join();
  printf("segments cleaned during the race: %llu\n",
         static_cast<unsigned long long>(cleaned.load()));
  EXPECT_GT(cleaned.load(), 0u);
  for (const auto& [k, gone] : deleted) {
    if (!gone) continue;
    std::string got;
    Status st = ks->Get(k, &got);
    EXPECT_TRUE(st.IsNotFound()) << k << " resurrected: " << got.substr(0, 8);
  }
  ExpectExactly(*ks, want, "after the race");
}

}  // namespace
}  // namespace kv::store
