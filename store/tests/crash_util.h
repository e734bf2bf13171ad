// Helpers for crash tests with the persistence tracker: a tracked pool
// whose bytes outlive the Pool (so a clean close can be crashed too), a
// crash driver that checks images at every persist point of an operation
// and after it returns, and keys placed in chosen buckets.
#ifndef KV_STORE_TESTS_CRASH_UTIL_H_
#define KV_STORE_TESTS_CRASH_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store::testing {

// A Mapping over bytes someone else owns (a TrackedPool's): the Pool that
// uses it may close while the bytes and their tracker live on.
class BorrowedMapping : public Mapping {
 public:
  explicit BorrowedMapping(Mapping* inner) : inner_(inner) {}
  uint8_t* base() override { return inner_->base(); }
  size_t size() const override { return inner_->size(); }
  Persister* persister() override { return inner_->persister(); }
  std::string granularity() const override { return inner_->granularity(); }

 private:
  Mapping* inner_;
};

// Pool bytes with a persistence tracker. Pools are created or opened on
// them any number of times (one at a time); the tracker's durable image
// survives a Pool's close, so "close, then lose power" can be modelled.
class TrackedPool {
 public:
  // Zeroed bytes (Create), or a crash image (Open).
  explicit TrackedPool(size_t size)
      : TrackedPool(std::vector<uint8_t>(size, 0)) {}
  explicit TrackedPool(const std::vector<uint8_t>& image)
      : tracker_(std::make_shared<PersistenceTracker>()),
        mem_(MemoryMapping::FromImage(image, tracker_)) {
    tracker_->Attach(mem_->base(), mem_->size());
  }
  Result<std::unique_ptr<Pool>> Create() {
    return Pool::CreateOn(std::make_unique<BorrowedMapping>(mem_.get()),
                          NoGrace());
  }
  Result<std::unique_ptr<Pool>> Open() {
    return Pool::OpenOn(std::make_unique<BorrowedMapping>(mem_.get()),
                        NoGrace());
  }
  PersistenceTracker& tracker() { return *tracker_; }
  // What a power failure now leaves with every unpersisted line lost.
  std::vector<uint8_t> LoseUnpersisted() const {
    std::mt19937_64 unused;
    return tracker_->CrashImage(PersistenceTracker::Mode::kAllReverted,
                                &unused);
  }

 private:
  std::shared_ptr<PersistenceTracker> tracker_;
  std::unique_ptr<MemoryMapping> mem_;
};

// Opens a crash image (writable: recovery repairs what it may).
inline Result<std::unique_ptr<Pool>> OpenImage(const std::vector<uint8_t>& img,
                                               bool read_only = false) {
  PoolOptions o = NoGrace();
  o.read_only = read_only;
  return Pool::OpenOn(MemoryMapping::FromImage(img, nullptr), o);
}

// Where an image was taken: a persist point during the operation, or
// after it returned.
struct CrashPoint {
  int point = 0;  // 1, 2, ... during the op; 0 after it returned
  int image = 0;  // which image at that point
  bool after = false;
  std::string ToString() const {
    return (after ? std::string("after the operation returned")
                  : "persist point " + std::to_string(point)) +
           ", image " + std::to_string(image);
  }
};

// Runs `op`. At each of its persist points, and once more after it
// returns, builds crash images — every unpersisted line lost, every one
// kept (at persist points), and `random_images` random mixes — opens each
// (writable) and calls verify(pool, where). Returns the number of persist
// points the op had.
inline int CrashEverywhere(
    PersistenceTracker* tracker, int random_images,
    const std::function<void(Pool* pool, const CrashPoint& where)>& verify,
    const std::function<void()>& op) {
  std::mt19937_64 rng(42);
  int points = 0;
  auto check = [&](const CrashPoint& base) {
    using Mode = PersistenceTracker::Mode;
    std::vector<Mode> modes = {Mode::kAllReverted};
    if (!base.after) modes.push_back(Mode::kAllKept);
    for (int i = 0; i < random_images; i++) modes.push_back(Mode::kRandom);
    for (size_t i = 0; i < modes.size(); i++) {
      CrashPoint where = base;
      where.image = static_cast<int>(i);
      auto pool = OpenImage(tracker->CrashImage(modes[i], &rng));
      if (!pool.ok()) {
        ADD_FAILURE() << where.ToString() << ": open "
                      << pool.status().ToString();
        return;
      }
      verify(pool->get(), where);
      if (::testing::Test::HasFailure()) return;
    }
  };
  tracker->SetHook([&](uint64_t) {
    points++;
    if (!::testing::Test::HasFailure()) check({points, 0, false});
  });
  op();
  tracker->SetHook(nullptr);
  if (!::testing::Test::HasFailure()) check({0, 0, true});
  return points;
}

// A pool of 1 MiB on a tracked in-memory mapping (power failures are
// modelled by tracker_) holding one TinyKeyspace "ks".
class TrackedPoolTest : public ::testing::Test {
 protected:
  static constexpr size_t kPoolSize = 1 << 20;
  void SetUp() override {
    tracker_ = std::make_shared<PersistenceTracker>();
    auto mapping = MemoryMapping::Zeroed(kPoolSize, tracker_);
    tracker_->Attach(mapping->base(), kPoolSize);
    auto pool = Pool::CreateOn(std::move(mapping), NoGrace());
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", TinyKeyspace());
    ASSERT_TRUE(ks.ok());
    ks_ = *ks;
  }

  std::shared_ptr<PersistenceTracker> tracker_;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

}  // namespace kv::store::testing

#endif  // KV_STORE_TESTS_CRASH_UTIL_H_
