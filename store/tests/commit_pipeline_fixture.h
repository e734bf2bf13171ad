// What the commit pipeline's tests share (commit_pipeline_test.cc,
// commit_pipeline_overlap_test.cc): an observable commit point, a deadline
// for a pipeline that might never wake a caller, and a tracked pool with
// one key per home bucket.
#ifndef KV_STORE_TESTS_COMMIT_PIPELINE_FIXTURE_H_
#define KV_STORE_TESTS_COMMIT_PIPELINE_FIXTURE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "crash_util.h"
#include "kv/store/commit_pipeline.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store::testing {

// The local persist, observable: counts its calls and how many ran at
// once, runs hooks before and after the persist, remembers which records
// it made durable, can fail, and declares `in_flight` batches.
class TestCommitPoint : public CommitPoint {
 public:
  TestCommitPoint(Persister* persister, bool publish_before_durable)
      : persister_(persister), early_(publish_before_durable) {}

  Status MakeDurable(const Persister::Range* ranges, size_t n) override {
    const int call = ++calls_;
    Running running(this);
    if (before) before(call);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (fail) return Status::Unavailable("test commit point refuses");
    persister_->PersistRanges(ranges, n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < n; i++) durable_.insert(ranges[i].addr);
    }
    if (after) after(call);
    return Status::Ok();
  }
  bool publish_before_durable() const override { return early_; }
  int batches_in_flight() const override { return in_flight; }

  int calls() const { return calls_.load(); }
  // The most MakeDurable calls that ran at once.
  int most_at_once() const { return most_.load(); }
  bool MadeDurable(const void* addr) {
    std::lock_guard<std::mutex> lock(mu_);
    return durable_.count(addr) > 0;
  }

  // Set before commits start.
  std::function<void(int call)> before;
  std::function<void(int call)> after;
  std::chrono::microseconds delay{0};
  bool fail = false;
  int in_flight = 1;

 private:
  class Running {
   public:
    explicit Running(TestCommitPoint* p) : p_(p) {
      const int now = ++p_->running_;
      int most = p_->most_.load();
      while (now > most && !p_->most_.compare_exchange_weak(most, now)) {
      }
    }
    ~Running() { --p_->running_; }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;

   private:
    TestCommitPoint* const p_;
  };

  Persister* const persister_;
  const bool early_;
  std::atomic<int> calls_{0};
  std::atomic<int> running_{0};
  std::atomic<int> most_{0};
  std::mutex mu_;
  std::set<const void*> durable_;
};

// Runs fn; if it has not returned after `seconds`, the test fails and the
// binary aborts (a pipeline whose followers are never woken hangs).
inline void WithDeadline(int seconds, const std::function<void()>& fn) {
  auto done = std::async(std::launch::async, fn);
  if (done.wait_for(std::chrono::seconds(seconds)) ==
      std::future_status::timeout) {
    std::fprintf(stderr,
                 "commit pipeline: no progress in %d s (a caller "
                 "never woken?)\n",
                 seconds);
    std::abort();
  }
  done.get();
}

class CommitPipelineTest : public TrackedPoolTest {
 protected:
  using Mode = PersistenceTracker::Mode;

  void SetUp() override {
    TrackedPoolTest::SetUp();
    // One key per home bucket (a 16-bucket index).
    for (uint64_t h = 0; h < 8; h++) keys_.push_back(KeysWithHome(h, 1)[0]);
  }
  void TearDown() override { ks_->pipeline().set_commit_point(nullptr); }

  TestCommitPoint* UsePoint(bool publish_before_durable) {
    point_ = std::make_unique<TestCommitPoint>(ks_->persister(),
                                               publish_before_durable);
    ks_->pipeline().set_commit_point(point_.get());
    return point_.get();
  }

  // What `key` reads in the image a power failure leaves now ("" absent).
  std::string AfterCrash(const std::string& key, Mode mode) {
    std::mt19937_64 rng(1);
    auto pool = Pool::OpenOn(
        MemoryMapping::FromImage(tracker_->CrashImage(mode, &rng), nullptr),
        NoGrace());
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    if (!pool.ok()) return "<open failed>";
    EXPECT_TRUE((*pool)->Check().ok());
    std::string v;
    Status st = (*pool)->GetKeyspace("ks").value()->Get(key, &v);
    EXPECT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
    return st.ok() ? v : "";
  }
  // What `key` reads live ("" absent).
  std::string Live(const std::string& key) {
    std::string v;
    Status st = ks_->Get(key, &v);
    EXPECT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
    return st.ok() ? v : "";
  }
  std::vector<Result<CommitResult>> CommitAll(Writer* w) {
    std::vector<Result<CommitResult>> out;
    w->CommitStaged(&out);
    return out;
  }

  // `threads` threads at once, each with its own Writer, put `puts`
  // values over `keys` keys of their own (prefix + "t<thread>-<k>"),
  // through the commit point `point`. Returns how many acknowledged puts
  // `point` had not made durable by then. Checks that every key exists
  // and reads the same after a power failure as live.
  int PutFromThreads(TestCommitPoint* point, const std::string& prefix,
                     int threads, int puts, int keys) {
    auto key = [&](int t, int k) {
      return prefix + "t" + std::to_string(t) + "-" + std::to_string(k);
    };
    std::atomic<int> not_durable{0};
    WithDeadline(60, [&] {
      std::vector<std::thread> running;
      for (int t = 0; t < threads; t++) {
        running.emplace_back([&, t] {
          Writer w(ks_);
          for (int i = 0; i < puts; i++) {
            auto r = w.Put(key(t, i % keys), "v" + std::to_string(i));
            if (!r.ok()) {
              ADD_FAILURE() << r.status().ToString();
              return;
            }
            if (!point->MadeDurable(ks_->log_base() +
                                    r->committed.log_offset)) {
              not_durable++;
            }
          }
        });
      }
      for (auto& t : running) t.join();
    });
    for (int t = 0; t < threads; t++) {
      for (int k = 0; k < keys; k++) {
        EXPECT_EQ(AfterCrash(key(t, k), Mode::kAllReverted), Live(key(t, k)))
            << key(t, k);
        EXPECT_NE(Live(key(t, k)), "") << key(t, k);
      }
    }
    return not_durable.load();
  }

  std::vector<std::string> keys_;
  std::unique_ptr<TestCommitPoint> point_;
};

}  // namespace kv::store::testing

#endif  // KV_STORE_TESTS_COMMIT_PIPELINE_FIXTURE_H_
