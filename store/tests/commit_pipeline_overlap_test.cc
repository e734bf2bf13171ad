// Several commit points in flight (CommitPoint::batches_in_flight): the
// pipeline runs at most that many leaders at once, a second leader
// commits and acknowledges while the first is still in its commit point,
// and a crash at any persist point of two overlapping batches — one
// batch's persist covering the other's stored but not yet durable slot —
// leaves every acknowledged commit and every key old or new.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "commit_pipeline_fixture.h"

namespace kv::store {
namespace {

using testing::CommitPipelineTest;
using testing::KeysWithHome;
using testing::TestCommitPoint;
using testing::WithDeadline;
using Mode = PersistenceTracker::Mode;
using Clock = std::chrono::steady_clock;

// Waits up to 10 s for `flag`; false if it never came.
bool AwaitFlag(const std::atomic<bool>& flag) {
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (!flag.load()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Four threads committing through a slow commit point: as many commit
// points run at once as it allows, never more; every ok result is durable
// when its Commit returns.
TEST_F(CommitPipelineTest, AtMostBatchesInFlightCommitPointsRunAtOnce) {
  for (int in_flight : {1, 2}) {
    SCOPED_TRACE("in flight " + std::to_string(in_flight));
    TestCommitPoint* point = UsePoint(true);
    point->in_flight = in_flight;
    point->delay = std::chrono::microseconds(3000);
    EXPECT_EQ(PutFromThreads(point, std::to_string(in_flight), 4, 20, 3), 0);
    // Four callers each blocked 3 ms per commit point: the limit is
    // reached, and never passed.
    EXPECT_EQ(point->most_at_once(), in_flight);
  }
}

// With two in flight, a caller arriving while a leader waits in its
// commit point leads its own batch, and is acknowledged (durable) before
// the first batch's commit point returns. With one in flight it would
// queue behind the first leader: the first's wait then times out.
TEST_F(CommitPipelineTest,
       ASecondLeaderCommitsWhileTheFirstIsInItsCommitPoint) {
  TestCommitPoint* point = UsePoint(true);
  point->in_flight = 2;
  std::atomic<bool> second_acked{false};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> first_returned{false};
  point->before = [&](int call) {
    if (call == 1) overlapped = AwaitFlag(second_acked);
  };
  WithDeadline(60, [&] {
    std::thread first([&] {
      Writer w(ks_);
      EXPECT_TRUE(w.Put(keys_[0], "first").ok());
      first_returned = true;
    });
    while (point->calls() < 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    Writer w(ks_);
    auto r = w.Put(keys_[1], "second");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(first_returned.load());
    EXPECT_TRUE(point->MadeDurable(ks_->log_base() + r->committed.log_offset));
    EXPECT_EQ(AfterCrash(keys_[1], Mode::kAllReverted), "second");
    second_acked = true;
    first.join();
  });
  EXPECT_TRUE(overlapped.load()) << "the second caller waited for the first";
  EXPECT_EQ(point->calls(), 2);
  EXPECT_EQ(AfterCrash(keys_[0], Mode::kAllReverted), "first");
}

// Two batches in flight on keys of one home bucket (distinct stripes):
// batch A (an update and a new key) is held inside its commit point
// until batch B (the same) is acknowledged. B's persist of the shared
// buckets carries A's slots (stored before the commit point in the local
// mode) while A's records are not durable: recovery must drop them. A
// crash at every persist point: each acknowledged batch reads new, every
// key old or new, Check() clean. Both modes.
TEST_F(CommitPipelineTest, CrashAtEveryPersistPointOfTwoOverlappingBatches) {
  for (bool strict : {false, true}) {
    SCOPED_TRACE(strict ? "strict" : "local");
    TestCommitPoint* point = UsePoint(!strict);
    point->in_flight = 2;
    // keys[0..1]: batch A, keys[2..3]: batch B; 0 and 2 exist before.
    const std::vector<std::string> keys =
        KeysWithHome(3, 4, 16, strict ? "s" : "l");
    {
      Writer setup(ks_);
      ASSERT_TRUE(setup.Put(keys[0], "old0").ok());
      ASSERT_TRUE(setup.Put(keys[2], "old2").ok());
    }
    auto fresh = [](size_t i) {
      return "new" + std::to_string(i) + std::string(90 * i, 'n');
    };
    Writer a(ks_);
    Writer b(ks_);
    for (size_t i = 0; i < 4; i++) {
      ASSERT_TRUE((i < 2 ? a : b).StagePut(keys[i], fresh(i)).ok());
    }
    std::atomic<bool> acked[2] = {false, false};
    std::atomic<bool> overlapped{false};
    const int first = point->calls() + 1;
    point->before = [&](int call) {
      if (call == first) overlapped = AwaitFlag(acked[1]);
    };
    std::mt19937_64 rng(11);
    int points = 0;
    auto verify = [&](const bool acknowledged[2]) {
      for (Mode m : {Mode::kAllReverted, Mode::kAllKept, Mode::kRandom,
                     Mode::kRandom, Mode::kRandom}) {
        auto pool = testing::OpenImage(tracker_->CrashImage(m, &rng));
        ASSERT_TRUE(pool.ok()) << pool.status().ToString();
        ASSERT_TRUE((*pool)->Check().ok()) << "point " << points;
        auto ks = (*pool)->GetKeyspace("ks").value();
        for (size_t i = 0; i < 4; i++) {
          std::string v;
          Status st = ks->Get(keys[i], &v);
          const bool existed = i % 2 == 0;
          if (acknowledged[i / 2] || (!existed && st.ok())) {
            ASSERT_TRUE(st.ok() && v == fresh(i))
                << "point " << points << " key " << i << ": " << st.ToString()
                << " " << v.substr(0, 8);
          } else if (existed) {
            ASSERT_TRUE(st.ok() &&
                        (v == fresh(i) || v == "old" + std::to_string(i)))
                << "point " << points << " key " << i << ": " << st.ToString()
                << " " << v.substr(0, 8);
          } else {
            ASSERT_TRUE(st.IsNotFound())
                << "point " << points << " key " << i << ": " << st.ToString();
          }
        }
      }
    };
    tracker_->SetHook([&](uint64_t) {
      points++;
      const bool snapshot[2] = {acked[0].load(), acked[1].load()};
      if (!::testing::Test::HasFailure()) verify(snapshot);
    });
    WithDeadline(120, [&] {
      std::thread ta([&] {
        std::vector<Result<CommitResult>> r;
        a.CommitStaged(&r);
        for (const auto& x : r) EXPECT_TRUE(x.ok()) << x.status().ToString();
        acked[0] = true;
      });
      while (point->calls() < first) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::vector<Result<CommitResult>> r;
      b.CommitStaged(&r);
      for (const auto& x : r) EXPECT_TRUE(x.ok()) << x.status().ToString();
      EXPECT_FALSE(acked[0].load());  // A is still in its commit point
      acked[1] = true;
      ta.join();
    });
    tracker_->SetHook(nullptr);
    point->before = nullptr;
    EXPECT_TRUE(overlapped.load()) << "batch B waited for batch A";
    const bool all[2] = {true, true};
    verify(all);
    EXPECT_GE(points, 2);
    ASSERT_TRUE(a.Close().ok());
    ASSERT_TRUE(b.Close().ok());
  }
}

}  // namespace
}  // namespace kv::store
