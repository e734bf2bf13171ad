// kvadmin restore is all-or-nothing across a power failure: a crash at any
// persist point of PoolRestore::Commit (and of the roll-back that follows)
// leaves a pool that, once opened, is byte for byte the pool before the
// restore or the restored pool — never a mix; or, after the commit point,
// the restored pool while its keyspaces' commit logs are being given
// (each keyspace with or without one, every value the snapshot's).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "kv/store/pool.h"
#include "kv/store/pool_restore.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "restore_test_util.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::BorrowedMapping;
using testing::MemoryJournal;
using testing::TestSnapshot;

constexpr size_t kPoolSize = 1 << 20;

class RestoreCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tracker_ = std::make_shared<PersistenceTracker>();
    mapping_ = MemoryMapping::Zeroed(kPoolSize, tracker_);
    tracker_->Attach(mapping_->base(), kPoolSize);
    auto pool = Pool::CreateOn(
        std::make_unique<BorrowedMapping>(mapping_.get()), testing::NoGrace());
    ASSERT_TRUE(pool.ok());
    for (const char* name : {"a", "b"}) {
      auto ks = (*pool)->CreateKeyspace(name, testing::TinyKeyspace());
      ASSERT_TRUE(ks.ok()) << ks.status().ToString();
      Writer w(*ks);
      for (int i = 0; i < 30; i++) {
        const std::string k = std::string(name) + std::to_string(i);
        ASSERT_TRUE(w.Put(k, "v" + k).ok());
        model_[name][k] = "v" + k;
      }
    }
    snapshot_.Take(pool->get());
    pool->reset();  // clean close: everything durable
    // The damage, made durable: half of a's index zeroed, b's catalog slot
    // lost (both copies), and an update after the snapshot.
    {
      auto p = Pool::OpenOn(std::make_unique<BorrowedMapping>(mapping_.get()),
                            testing::NoGrace());
      ASSERT_TRUE(p.ok());
      Writer w((*p)->GetKeyspace("a").value());
      ASSERT_TRUE(w.Put("a1", "newer").ok());
      const KeyspaceInfo a = (*p)->GetKeyspace("a").value()->info();
      (void)w.Close();
      index_a_ = a.index_offset;
    }
    uint8_t* base = mapping_->base();
    std::memset(base + index_a_, 0, 64 * 8);
    std::memset(base + 8192 + 512 + 40, 0x77, 8);  // slot 1, copy 0
    std::memset(base + 8192 + 768 + 40, 0x77, 8);  // slot 1, copy 1
    // b's region lost its commit log checkpoint too (bytes [16, 80) of its
    // header page, docs/format.md): until the restore formats a new one, a
    // catalog entry naming b's ring would make the pool refuse to open.
    for (const RestoreKeyspace& k : snapshot_.keyspaces) {
      if (k.name == "b") std::memset(base + k.region_offset + 16, 0, 64);
    }
    tracker_->Persist(base, kPoolSize);
    before_.assign(base, base + kPoolSize);
    // What a restore that completes leaves (same code, no crash).
    auto copy = MemoryMapping::FromImage(before_, nullptr);
    Mapping* copy_raw = copy.get();
    auto state = std::make_shared<std::optional<std::string>>();
    auto r = PoolRestore::OpenOn(std::move(copy),
                                 std::make_unique<MemoryJournal>(state));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(snapshot_.Apply(r->get()), 0u);
    ASSERT_TRUE((*r)->Commit().ok());
    after_.assign(copy_raw->base(), copy_raw->base() + kPoolSize);
    ASSERT_NE(after_, before_);
  }

  // Opens a crash image the way Pool::Open does (roll back first) and
  // says which of the two states it is; fails the test on a mix.
  std::string Recover(const std::vector<uint8_t>& image,
                      const std::optional<std::string>& journal) {
    auto m = MemoryMapping::FromImage(image, nullptr);
    auto state = std::make_shared<std::optional<std::string>>(journal);
    MemoryJournal j(state);
    std::string note;
    Status st = RollBackRestore(m.get(), &j, &note);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_FALSE(state->has_value());  // the roll-back removes it
    const std::vector<uint8_t> now(m->base(), m->base() + kPoolSize);
    if (now == before_) return "before";
    if (now == after_) return "after";
    // Past the commit point (no journal) the restored keyspaces get their
    // commit logs (PoolRestore::GiveCommitLogs): a crash there leaves the
    // restored pool with some keyspaces still without one.
    if (!journal.has_value() && ReadsTheSnapshot(now, nullptr)) {
      return "restored";
    }
    return "mixed";
  }

  // The pool in `image` opens, checks clean and reads the snapshot's
  // values; *with_commit_log counts its keyspaces that have one.
  bool ReadsTheSnapshot(const std::vector<uint8_t>& image,
                        int* with_commit_log) {
    auto pool = Pool::OpenOn(MemoryMapping::FromImage(image, nullptr), {});
    if (!pool.ok() || !(*pool)->Check().ok()) return false;
    for (const auto& [name, keys] : model_) {
      auto ks = (*pool)->GetKeyspace(name);
      if (!ks.ok()) return false;
      for (const auto& [k, v] : keys) {
        std::string got;
        // a1 as in the snapshot, not "newer"
        if (!(*ks)->Get(k, &got).ok() || got != v) return false;
      }
    }
    if (with_commit_log != nullptr) {
      *with_commit_log = 0;
      for (const KeyspaceInfo& k : (*pool)->ListKeyspaces()) {
        *with_commit_log += k.commit_log_entries != 0;
      }
    }
    return true;
  }

  void ExpectRestoredPoolReadsTheSnapshot() {
    int with_commit_log = -1;
    EXPECT_TRUE(ReadsTheSnapshot(after_, &with_commit_log));
    EXPECT_EQ(with_commit_log, 2);  // both keyspaces had one
  }

  std::shared_ptr<PersistenceTracker> tracker_;
  std::unique_ptr<MemoryMapping> mapping_;
  std::map<std::string, std::map<std::string, std::string>> model_;
  TestSnapshot snapshot_;
  uint64_t index_a_ = 0;
  std::vector<uint8_t> before_, after_;
};

TEST_F(RestoreCrashTest, EveryPersistPointLeavesBeforeOrAfter) {
  ExpectRestoredPoolReadsTheSnapshot();
  auto state = std::make_shared<std::optional<std::string>>();
  auto r =
      PoolRestore::OpenOn(std::make_unique<BorrowedMapping>(mapping_.get()),
                          std::make_unique<MemoryJournal>(state));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(snapshot_.Apply(r->get()), 0u);
  std::mt19937_64 rng(13);
  std::map<std::string, int> seen;
  int points = 0;
  tracker_->SetHook([&](uint64_t) {
    points++;
    for (int i = 0; i < 6; i++) {
      const auto mode = i == 0   ? PersistenceTracker::Mode::kAllReverted
                        : i == 1 ? PersistenceTracker::Mode::kAllKept
                                 : PersistenceTracker::Mode::kRandom;
      const std::string got = Recover(tracker_->CrashImage(mode, &rng), *state);
      EXPECT_NE(got, "mixed") << "crash at persist point " << points;
      seen[got]++;
    }
  });
  ASSERT_TRUE((*r)->Commit().ok());
  tracker_->SetHook(nullptr);
  EXPECT_GE(points, 3);  // index persists and catalog entries
  EXPECT_EQ(seen["mixed"], 0);
  EXPECT_GT(seen["before"], 0);
  EXPECT_GT(seen["restored"], 0);  // crashes while commit logs are given
  // After Commit returned: restored, and nothing left to roll back.
  EXPECT_FALSE(state->has_value());
  EXPECT_EQ(Recover(tracker_->CrashImage(PersistenceTracker::Mode::kAllReverted,
                                         &rng),
                    *state),
            "after");
}

TEST_F(RestoreCrashTest, CrashDuringTheRollBackRollsBackAgain) {
  // Crash in the middle of Commit (all its writes volatile, half kept).
  auto state = std::make_shared<std::optional<std::string>>();
  auto r =
      PoolRestore::OpenOn(std::make_unique<BorrowedMapping>(mapping_.get()),
                          std::make_unique<MemoryJournal>(state));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(snapshot_.Apply(r->get()), 0u);
  std::vector<uint8_t> crashed;
  std::optional<std::string> journal;
  std::mt19937_64 rng(7);
  tracker_->SetHook([&](uint64_t k) {
    if (crashed.empty() && state->has_value()) {
      crashed = tracker_->CrashImage(PersistenceTracker::Mode::kRandom, &rng);
      journal = *state;
    }
  });
  ASSERT_TRUE((*r)->Commit().ok());
  tracker_->SetHook(nullptr);
  ASSERT_FALSE(crashed.empty());
  ASSERT_TRUE(journal.has_value());
  // Roll it back on a tracked mapping and crash at each of its persists.
  auto t2 = std::make_shared<PersistenceTracker>();
  auto m2 = MemoryMapping::FromImage(crashed, t2);
  t2->Attach(m2->base(), kPoolSize);
  auto state2 = std::make_shared<std::optional<std::string>>(journal);
  int points = 0;
  t2->SetHook([&](uint64_t) {
    points++;
    EXPECT_EQ(Recover(t2->CrashImage(PersistenceTracker::Mode::kRandom, &rng),
                      *state2),
              "before");
  });
  MemoryJournal j2(state2);
  std::string note;
  ASSERT_TRUE(RollBackRestore(m2.get(), &j2, &note).ok());
  EXPECT_NE(note.find("rolled back an interrupted kvadmin restore"),
            std::string::npos);
  EXPECT_EQ(points, 2);  // slots, then the catalog
  EXPECT_EQ(std::vector<uint8_t>(m2->base(), m2->base() + kPoolSize), before_);
}

}  // namespace
}  // namespace kv::store
