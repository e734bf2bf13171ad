// The commit pipeline (commit_pipeline.h): one commit point for many
// commits of one caller or of several at once, results in request order,
// nothing durable before the commit point and (strict mode) nothing
// visible before it, each key old-or-new across a crash at any persist
// point of a batch of several callers, and the paths that must reach the
// commit point of what is decided first.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "commit_pipeline_fixture.h"

namespace kv::store {
namespace {

using testing::CommitPipelineTest;
using testing::KeysWithHome;
using testing::TestCommitPoint;
using testing::WithDeadline;
using Mode = PersistenceTracker::Mode;
using Gather = CommitPipeline::Gather;

TEST_F(CommitPipelineTest, PutsOfDistinctKeysShareOnePersistPoint) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("warm", "up").ok());  // takes the segment
  const uint64_t before = tracker_->persist_count();
  for (const auto& k : keys_) ASSERT_TRUE(w.StagePut(k, "v-" + k).ok());
  EXPECT_EQ(w.staged(), keys_.size());
  EXPECT_EQ(tracker_->persist_count(), before);  // nothing persisted yet
  EXPECT_EQ(Live(keys_[0]), "");                 // nor visible
  auto results = CommitAll(&w);
  ASSERT_EQ(results.size(), keys_.size());
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(w.staged(), 0u);
  EXPECT_EQ(tracker_->persist_count() - before, 1u);
  for (const auto& k : keys_) {
    EXPECT_EQ(AfterCrash(k, Mode::kAllReverted), "v-" + k) << k;
  }
}

// Each caller's results come back in its request order, also mixed with
// refusals and with another path (a delete) in the batch.
TEST_F(CommitPipelineTest, ResultsComeBackInRequestOrder) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put(keys_[7], "exists").ok());
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < 6; i++) {
    ASSERT_TRUE(w.StagePut(keys_[i], std::string(10 + 70 * i, 'a')).ok());
  }
  ASSERT_TRUE(w.StagePut(keys_[7], "no", Condition::kIfAbsent).ok());
  ASSERT_TRUE(w.StageDelete(keys_[6]).ok());  // absent: ok, no change
  auto r = CommitAll(&w);
  ASSERT_EQ(r.size(), 8u);
  uint64_t last_offset = 0;
  uint64_t last_seq = 0;
  for (size_t i = 0; i < 6; i++) {
    ASSERT_TRUE(r[i].ok()) << i << ": " << r[i].status().ToString();
    EXPECT_EQ(r[i]->committed.length,
              record_format::RecordSize(keys_[i].size(), 10 + 70 * i))
        << i;
    EXPECT_GT(r[i]->committed.log_offset, last_offset) << i;
    EXPECT_GT(r[i]->committed.sequence, last_seq) << i;
    last_offset = r[i]->committed.log_offset;
    last_seq = r[i]->committed.sequence;
    Version v;
    std::string value;
    ASSERT_TRUE(ks_->Get(keys_[i], &value, &v).ok());
    EXPECT_EQ(v.sequence, r[i]->committed.sequence) << i;
    EXPECT_EQ(value, std::string(10 + 70 * i, 'a')) << i;
  }
  EXPECT_TRUE(r[6].status().IsConditionFailed()) << r[6].status().ToString();
  ASSERT_TRUE(r[7].ok()) << r[7].status().ToString();
  EXPECT_TRUE(r[7]->tombstone);
  EXPECT_FALSE(r[7]->had_previous);
}

// Local mode: a decided put is visible while its commit point runs (a
// crash then loses it: it is not acknowledged yet); durable after.
TEST_F(CommitPipelineTest, LocalModeShowsPutsBeforeTheirCommitPoint) {
  TestCommitPoint* point = UsePoint(true);
  Writer w(ks_);
  ASSERT_TRUE(w.Put(keys_[0], "old").ok());
  ASSERT_TRUE(w.StagePut(keys_[0], "new").ok());
  ASSERT_TRUE(w.StagePut(keys_[1], "fresh").ok());
  int checked = 0;
  point->before = [&](int) {
    checked++;
    EXPECT_EQ(Live(keys_[0]), "new");
    EXPECT_EQ(Live(keys_[1]), "fresh");
    EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "old");
    EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "");
  };
  auto r = CommitAll(&w);
  EXPECT_EQ(checked, 1);
  ASSERT_TRUE(r[0].ok() && r[1].ok());
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "new");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "fresh");
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());  // the old slot was cleared
}

// Strict mode (publish after the commit point): no reader — Get, ForEach,
// another thread — finds a put, an update or a delete before MakeDurable
// returned; after Commit returns, all of it is visible and durable.
TEST_F(CommitPipelineTest, StrictModeShowsNothingBeforeTheCommitPoint) {
  TestCommitPoint* point = UsePoint(false);
  Writer w(ks_);
  ASSERT_TRUE(w.Put(keys_[0], "old").ok());
  ASSERT_TRUE(w.Put(keys_[2], "doomed").ok());
  ASSERT_TRUE(w.StagePut(keys_[0], "new").ok());
  ASSERT_TRUE(w.StagePut(keys_[1], "fresh").ok());
  ASSERT_TRUE(w.StageDelete(keys_[2]).ok());
  int checked = 0;
  const int base = point->calls();
  // Call base+1: the puts' commit point; base+2: the tombstone's (the
  // puts are published by then, the delete is not).
  auto unchanged = [&](int call) {
    checked++;
    const bool puts_published = call == base + 2;
    EXPECT_EQ(Live(keys_[0]), puts_published ? "new" : "old");
    EXPECT_EQ(Live(keys_[1]), puts_published ? "fresh" : "");
    EXPECT_EQ(Live(keys_[2]), "doomed");
    std::thread reader([&] {
      EXPECT_EQ(Live(keys_[0]), puts_published ? "new" : "old");
      EXPECT_EQ(Live(keys_[2]), "doomed");
    });
    reader.join();
    int seen = 0;
    ASSERT_TRUE(ks_->ForEach([&](const record_format::RecordView& v) {
                     if (!puts_published) EXPECT_NE(v.key, keys_[1]);
                     seen++;
                     return true;
                   })
                    .ok());
    EXPECT_EQ(seen, puts_published ? 3 : 2);
  };
  point->before = unchanged;
  point->after = unchanged;  // durable, MakeDurable not returned yet
  auto r = CommitAll(&w);
  EXPECT_EQ(checked, 4);  // the puts' commit point, the tombstone's
  for (const auto& x : r) ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(Live(keys_[0]), "new");
  EXPECT_EQ(Live(keys_[1]), "fresh");
  EXPECT_EQ(Live(keys_[2]), "");
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "new");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "fresh");
  EXPECT_EQ(AfterCrash(keys_[2], Mode::kAllReverted), "");
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(ks_->Stats().keys, 2u);
}

// An in-place replacement (all 16 slots of the neighbourhood taken) in
// strict mode: the old version stays visible until the record is durable.
TEST_F(CommitPipelineTest, StrictModeInPlaceReplacementWaitsForDurable) {
  Writer w(ks_);
  const auto keys = KeysWithHome(3, 16);
  for (const auto& k : keys) ASSERT_TRUE(w.Put(k, "v1").ok());
  TestCommitPoint* point = UsePoint(false);
  int checked = 0;
  point->after = [&](int) {
    checked++;
    EXPECT_EQ(Live(keys[5]), "v1");
  };
  auto r = w.Put(keys[5], "v2");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(checked, 1);
  EXPECT_EQ(Live(keys[5]), "v2");
  EXPECT_EQ(AfterCrash(keys[5], Mode::kAllReverted), "v2");
}

// A crash anywhere in the commit point: every key of the batch reads its
// old version or its new one, never nothing or a torn record.
TEST_F(CommitPipelineTest, ACrashInTheCommitPointLeavesEachKeyOldOrNew) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    UsePoint(!strict);
    Writer w(ks_);
    const std::string tag = strict ? "s" : "l";
    for (const auto& k : keys_) ASSERT_TRUE(w.Put(k, "old-" + tag + k).ok());
    for (const auto& k : keys_) {
      ASSERT_TRUE(w.StagePut(k, "new-" + tag + k + std::string(300, 'n')).ok());
    }
    const int points = testing::CrashEverywhere(
        tracker_.get(), 30,
        [&](Pool* pool, const testing::CrashPoint& at) {
          ASSERT_TRUE(pool->Check().ok()) << at.ToString();
          auto ks = pool->GetKeyspace("ks").value();
          for (const auto& k : keys_) {
            std::string v;
            ASSERT_TRUE(ks->Get(k, &v).ok()) << at.ToString() << " " << k;
            const std::string fresh = "new-" + tag + k + std::string(300, 'n');
            ASSERT_TRUE(at.after ? v == fresh
                                 : v == fresh || v == "old-" + tag + k)
                << at.ToString() << ": " << k << " reads " << v.substr(0, 12);
          }
        },
        [&] {
          auto r = CommitAll(&w);
          for (const auto& x : r) EXPECT_TRUE(x.ok());
        });
    // Local: the batch's one persist point. Strict: the records', then
    // the published slots'.
    EXPECT_EQ(points, strict ? 2 : 1);
    ASSERT_TRUE(w.Close().ok());
  }
}

// The same key twice in one batch: the first put reaches its commit point
// before the second is decided (a key never has two undurable versions).
TEST_F(CommitPipelineTest, TheSameKeyTwiceFlushesTheFirstPut) {
  TestCommitPoint* point = UsePoint(true);
  Writer w(ks_);
  ASSERT_TRUE(w.StagePut(keys_[0], "a").ok());
  ASSERT_TRUE(w.StagePut(keys_[1], "b").ok());
  ASSERT_TRUE(w.StagePut(keys_[0], "a2").ok());
  int checked = 0;
  point->before = [&](int call) {
    if (call != 2) return;
    checked++;
    EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "a");
    EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "b");
  };
  auto r = CommitAll(&w);
  ASSERT_EQ(r.size(), 3u);
  for (const auto& x : r) ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(point->calls(), 2);
  EXPECT_EQ(checked, 1);
  EXPECT_TRUE(r[2]->had_previous);
  EXPECT_EQ(r[2]->previous.sequence, r[0]->committed.sequence);
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "a2");
  EXPECT_EQ(Live(keys_[0]), "a2");
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(ks_->Stats().keys, 2u);
}

// A delete has ordered persist points of its own: what is decided before
// it reaches its commit point first.
TEST_F(CommitPipelineTest, ADeleteFlushesWhatIsDecidedFirst) {
  TestCommitPoint* point = UsePoint(true);
  Writer w(ks_);
  ASSERT_TRUE(w.Put(keys_[0], "x").ok());
  ASSERT_TRUE(w.Put(keys_[1], "y").ok());
  const int base = point->calls();
  ASSERT_TRUE(w.StagePut(keys_[1], "y2").ok());
  ASSERT_TRUE(w.StageDelete(keys_[0]).ok());
  int checked = 0;
  point->before = [&](int call) {
    if (call != base + 2) return;  // the delete's commit point
    checked++;
    EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "y2");
    EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "x");
  };
  auto r = CommitAll(&w);
  for (const auto& x : r) ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(checked, 1);
  EXPECT_EQ(point->calls() - base, 2);
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "");
  EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "y2");
}

// Conditions see puts that are decided but not yet durable: in the same
// batch, and from another caller while the first one's commit point runs
// (its stripe is held until publish).
TEST_F(CommitPipelineTest, ConditionsSeeDecidedButNotDurablePuts) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    TestCommitPoint* point = UsePoint(!strict);
    Writer w(ks_);
    const std::string k0 = keys_[0] + (strict ? "s" : "l");
    const std::string k1 = keys_[1] + (strict ? "s" : "l");
    const std::string k2 = keys_[2] + (strict ? "s" : "l");
    ASSERT_TRUE(w.StagePut(k0, "one", Condition::kIfAbsent).ok());
    ASSERT_TRUE(w.StagePut(k0, "two", Condition::kIfAbsent).ok());
    auto base = w.Put(k1, "base");
    ASSERT_TRUE(base.ok());
    auto r = CommitAll(&w);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(r[0].ok());
    EXPECT_TRUE(r[1].status().IsConditionFailed()) << r[1].status().ToString();
    EXPECT_EQ(Live(k0), "one");
    const uint64_t s0 = base->committed.sequence;
    ASSERT_TRUE(w.StagePut(k1, "p", Condition::kIfVersion, s0).ok());
    ASSERT_TRUE(w.StagePut(k1, "q", Condition::kIfVersion, s0).ok());
    r = CommitAll(&w);
    EXPECT_TRUE(r[0].ok());
    EXPECT_TRUE(r[1].status().IsConditionFailed()) << r[1].status().ToString();
    EXPECT_EQ(Live(k1), "p");

    // Another caller (ungathered: it waits for the key's stripe) while
    // the first put of k2 is in its commit point.
    ASSERT_TRUE(w.StagePut(k2, "first", Condition::kIfAbsent).ok());
    std::mutex mu;
    std::condition_variable cv;
    bool in_point = false, release = false;
    point->before = [&](int) {
      std::unique_lock<std::mutex> lock(mu);
      in_point = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    };
    Result<CommitResult> second = Status::Unavailable("not run");
    WithDeadline(30, [&] {
      std::thread first([&] { r = CommitAll(&w); });
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return in_point; });
      }
      point->before = nullptr;  // the first caller is past reading it
      std::thread other([&] {
        Writer w2(ks_, Gather::kNo);
        second = w2.Put(k2, "second", Condition::kIfAbsent);
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      {
        std::lock_guard<std::mutex> lock(mu);
        release = true;
      }
      cv.notify_all();
      first.join();
      other.join();
    });
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(r[0].ok());
    EXPECT_TRUE(second.status().IsConditionFailed())
        << second.status().ToString();
    EXPECT_EQ(Live(k2), "first");
  }
}

// A full segment is sealed only after the staged puts in it are durable.
TEST_F(CommitPipelineTest, ASegmentIsSealedOnlyAfterItsPutsAreDurable) {
  Writer w(ks_);
  const std::string value(900, 'v');  // ~9 records per 8 KiB segment
  size_t max_staged = 0;
  for (int i = 0; i < 30; i++) {
    ASSERT_TRUE(
        w.StagePut(keys_[i % keys_.size()] + "-" + std::to_string(i), value)
            .ok());
    max_staged = std::max(max_staged, w.staged());
  }
  auto r = CommitAll(&w);
  ASSERT_EQ(r.size(), 30u);
  for (const auto& x : r) EXPECT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_LE(max_staged, 9u);
  for (int i = 0; i < 30; i++) {
    EXPECT_EQ(AfterCrash(keys_[i % keys_.size()] + "-" + std::to_string(i),
                         Mode::kAllReverted),
              value);
  }
}

// Live bytes of an updated key's old version are removed only after the
// commit point (else its segment could be freed and rewritten while the
// old version is still the durable one). Both modes.
TEST_F(CommitPipelineTest, AccountingChangesOnlyAfterTheCommitPoint) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    TestCommitPoint* point = UsePoint(!strict);
    Writer w(ks_);
    const std::string k = keys_[0] + (strict ? "s" : "l");
    ASSERT_TRUE(w.Put(k, std::string(500, 'o')).ok());
    const uint64_t live = ks_->Stats().live_bytes;
    const uint64_t keys = ks_->Stats().keys;
    ASSERT_TRUE(w.StagePut(k, "short").ok());
    int checked = 0;
    point->after = [&](int) {
      checked++;
      // The new record counts from decide, the old one until publish.
      EXPECT_EQ(ks_->Stats().live_bytes,
                live + record_format::RecordSize(k.size(), 5));
      EXPECT_EQ(ks_->Stats().keys, keys);
    };
    auto r = CommitAll(&w);
    ASSERT_TRUE(r[0].ok());
    point->after = nullptr;
    EXPECT_EQ(checked, 1);
    EXPECT_EQ(ks_->Stats().live_bytes,
              live + record_format::RecordSize(k.size(), 5) -
                  record_format::RecordSize(k.size(), 500));
  }
}

TEST_F(CommitPipelineTest, GatherNoMakesOneCommitPointPerRequest) {
  TestCommitPoint* point = UsePoint(true);
  Writer w(ks_, Gather::kNo);
  for (size_t i = 0; i < 4; i++) ASSERT_TRUE(w.StagePut(keys_[i], "v").ok());
  auto r = CommitAll(&w);
  for (const auto& x : r) EXPECT_TRUE(x.ok());
  EXPECT_EQ(point->calls(), 4);
}

// A commit point that fails: nothing of what it covered is acknowledged
// or stays (slots, records, key count); the next commit works.
TEST_F(CommitPipelineTest, AFailingCommitPointRefusesAndUndoes) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    TestCommitPoint* point = UsePoint(!strict);
    Writer w(ks_);
    const std::string k0 = keys_[0] + (strict ? "s" : "l");
    const std::string k1 = keys_[1] + (strict ? "s" : "l");
    ASSERT_TRUE(w.Put(k0, "old").ok());
    const uint64_t keys = ks_->Stats().keys;
    point->fail = true;
    ASSERT_TRUE(w.StagePut(k0, "new").ok());
    ASSERT_TRUE(w.StagePut(k1, "fresh").ok());
    auto r = CommitAll(&w);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_TRUE(r[0].status().code() == StatusCode::kUnavailable)
        << r[0].status().ToString();
    EXPECT_TRUE(r[1].status().code() == StatusCode::kUnavailable)
        << r[1].status().ToString();
    EXPECT_EQ(Live(k0), "old");
    EXPECT_EQ(Live(k1), "");
    EXPECT_EQ(ks_->Stats().keys, keys);
    CheckReport report;
    ks_->Check(&report);
    EXPECT_TRUE(report.problems.empty());
    point->fail = false;
    ASSERT_TRUE(w.Put(k1, "later").ok());
    EXPECT_EQ(Live(k1), "later");
    EXPECT_EQ(AfterCrash(k1, Mode::kAllReverted), "later");
  }
}

// Several threads committing at once share commit points (a slow commit
// point lets the next batch gather), and every ok result is durable when
// its Commit returns.
TEST_F(CommitPipelineTest, ConcurrentCallersShareCommitPoints) {
  TestCommitPoint* point = UsePoint(true);
  point->delay = std::chrono::microseconds(2000);
  constexpr int kThreads = 4;
  constexpr int kPuts = 25;
  EXPECT_EQ(PutFromThreads(point, "", kThreads, kPuts, 4), 0);
  EXPECT_LT(point->calls(), kThreads * kPuts);  // shared
}

// A crash at every persist point of a batch gathered from several
// callers (puts, an update, a delete): every acknowledged commit is
// there, every key reads its old or its new state. Both modes.
TEST_F(CommitPipelineTest, CrashAtEveryPersistPointOfABatchOfSeveralCallers) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    const std::string tag = strict ? "s" : "l";
    TestCommitPoint* point = UsePoint(!strict);
    // One key per home bucket (stripe): the batch is split by nothing.
    auto key = [&](size_t i) { return KeysWithHome(i, 1, 16, tag)[0]; };
    {
      Writer setup(ks_);
      for (size_t i = 0; i < 7; i++) {
        ASSERT_TRUE(setup.Put(key(i), "old" + std::to_string(i)).ok());
      }
    }
    auto fresh = [](size_t i) {
      return "new" + std::to_string(i) + std::string(100 * i, 'n');
    };
    // Three callers of two requests each; caller 2 also deletes key 6.
    constexpr int kCallers = 3;
    std::vector<std::unique_ptr<Writer>> writers;
    for (int c = 0; c < kCallers; c++) {
      writers.push_back(std::make_unique<Writer>(ks_));
      for (size_t i = 2 * size_t(c); i < 2 * size_t(c) + 2; i++) {
        ASSERT_TRUE(writers[c]->StagePut(key(i), fresh(i)).ok());
      }
    }
    ASSERT_TRUE(writers[2]->StageDelete(key(6)).ok());
    Writer gate(ks_);
    std::atomic<bool> acked[kCallers] = {false, false, false};
    // The gate's commit point holds the leader until all three callers
    // are queued: they become one batch.
    const int first = point->calls() + 1;
    point->before = [&](int call) {
      if (call != first) return;
      while (ks_->pipeline().queued_for_testing() < size_t{kCallers}) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
    std::mt19937_64 rng(7);
    int points = 0;
    auto verify = [&](const bool acknowledged[kCallers]) {
      std::vector<Mode> modes = {Mode::kAllReverted, Mode::kAllKept,
                                 Mode::kRandom, Mode::kRandom, Mode::kRandom};
      for (Mode m : modes) {
        auto pool = testing::OpenImage(tracker_->CrashImage(m, &rng));
        ASSERT_TRUE(pool.ok()) << pool.status().ToString();
        ASSERT_TRUE((*pool)->Check().ok()) << "point " << points;
        auto ks = (*pool)->GetKeyspace("ks").value();
        for (size_t i = 0; i < 7; i++) {
          std::string v;
          Status st = ks->Get(key(i), &v);
          const std::string old = "old" + std::to_string(i);
          const bool acks = acknowledged[i == 6 ? 2 : i / 2];
          if (i == 6) {
            ASSERT_TRUE(acks ? st.IsNotFound()
                             : st.IsNotFound() || (st.ok() && v == old))
                << "point " << points << " key 6: " << st.ToString();
            continue;
          }
          ASSERT_TRUE(st.ok()) << "point " << points << " key " << i;
          ASSERT_TRUE(acks ? v == fresh(i) : v == fresh(i) || v == old)
              << "point " << points << " key " << i << " reads "
              << v.substr(0, 8);
        }
      }
    };
    tracker_->SetHook([&](uint64_t) {
      points++;
      bool snapshot[kCallers];  // before the images are built
      for (int c = 0; c < kCallers; c++) snapshot[c] = acked[c].load();
      if (!::testing::Test::HasFailure()) verify(snapshot);
    });
    WithDeadline(120, [&] {
      std::thread g([&] { ASSERT_TRUE(gate.Put(key(7), "gate").ok()); });
      while (point->calls() < first) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::vector<std::thread> callers;
      for (int c = 0; c < kCallers; c++) {
        callers.emplace_back([&, c] {
          std::vector<Result<CommitResult>> r;
          writers[c]->CommitStaged(&r);
          for (const auto& x : r) EXPECT_TRUE(x.ok()) << x.status().ToString();
          acked[c] = true;
        });
      }
      g.join();
      for (auto& t : callers) t.join();
    });
    tracker_->SetHook(nullptr);
    point->before = nullptr;
    const bool all[kCallers] = {true, true, true};
    verify(all);
    // One batch: the gate's commit point, the delete's, and the puts'
    // (one, or two when caller 2 — whose delete first brings what is
    // decided to its commit point — is not the last in the batch). Each
    // caller alone would make 5.
    EXPECT_GE(point->calls() - first + 1, 3);
    EXPECT_LE(point->calls() - first + 1, 4);
    EXPECT_GE(points, 3);
    for (auto& w : writers) ASSERT_TRUE(w->Close().ok());
    ASSERT_TRUE(gate.Close().ok());
  }
}

// Two writers on the same few keys, committing staged batches at random
// points: no deadlock, and after the last commit a power failure that
// loses everything unpersisted shows exactly what the live pool showed.
TEST_F(CommitPipelineTest, TwoWritersOnSharedKeysLoseNothingCommitted) {
  constexpr int kKeys = 10;
  WithDeadline(120, [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++) {
      threads.emplace_back([this, t] {
        Writer w(ks_);
        std::mt19937_64 rng(200 + t);
        std::vector<Result<CommitResult>> r;
        auto commit = [&] {
          r.clear();
          w.CommitStaged(&r);
          bool full = false;
          for (const auto& x : r) {
            if (!x.ok() && !x.status().IsNoSpace() &&
                !x.status().IsConditionFailed()) {
              ADD_FAILURE() << x.status().ToString();
            }
            full |= x.status().IsNoSpace();
          }
          if (full) (void)ks_->Clean(1.0);
        };
        for (int i = 0; i < 600; i++) {
          const std::string key = "key" + std::to_string(rng() % kKeys);
          Status st = rng() % 8 == 0
                          ? w.StageDelete(key)
                          : w.StagePut(key, "t" + std::to_string(t) + "-" +
                                                std::to_string(i) +
                                                std::string(i % 70, 'v'));
          if (st.IsNoSpace()) {
            commit();
            (void)ks_->Clean(1.0);
          } else if (!st.ok()) {
            ADD_FAILURE() << st.ToString();
            return;
          }
          if (rng() % 4 == 0) commit();
        }
        commit();
      });
    }
    for (auto& t : threads) t.join();
  });
  std::map<std::string, std::string> live;
  for (int k = 0; k < kKeys; k++) {
    std::string v;
    const std::string key = "key" + std::to_string(k);
    if (ks_->Get(key, &v).ok()) live[key] = v;
  }
  CheckReport report;
  ks_->Check(&report);
  EXPECT_TRUE(report.problems.empty());
  for (int k = 0; k < kKeys; k++) {
    const std::string key = "key" + std::to_string(k);
    const auto it = live.find(key);
    EXPECT_EQ(AfterCrash(key, Mode::kAllReverted),
              it == live.end() ? "" : it->second)
        << key;
  }
}

}  // namespace
}  // namespace kv::store
