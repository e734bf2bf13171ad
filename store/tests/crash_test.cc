// Crash consistency with the persistence tracker: random workloads, a
// simulated power failure at persist points, reopen, compare with a model.
//
// At a persist point the tracker builds the image a power failure would
// leave (each not-yet-persisted cache line kept or reverted). The image
// must open without repair, Check() clean, and show every acknowledged
// put/delete exactly — the operation in flight may show either outcome.
// Bounded by default; RPKV_CRASH_SCALE=N (env) runs N times the seeds and
// points for longer local runs.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <optional>
#include <random>

#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::NoGrace;
using testing::TinyKeyspace;

constexpr size_t kPoolSize = 1 << 20;
constexpr int kUniverse = 40;

int CrashScale() {
  const char* s = getenv("RPKV_CRASH_SCALE");
  const int n = s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

struct Op {
  enum Kind { kPut, kDelete, kClean, kReturn, kCreateB, kDropB } kind;
  std::string key;
  std::string value;
};

class CrashTest : public ::testing::Test {
 protected:
  // Runs `ops` random operations with seed `seed`; at each persist point
  // for which `check_point(k)` is true, verifies crash images.
  void Run(uint64_t seed, int ops,
           const std::function<bool(uint64_t)>& check_point) {
    seed_ = seed;
    rng_.seed(seed);
    tracker_ = std::make_shared<PersistenceTracker>();
    auto mapping = MemoryMapping::Zeroed(kPoolSize, tracker_);
    tracker_->Attach(mapping->base(), kPoolSize);
    auto pool = Pool::CreateOn(std::move(mapping), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->CreateKeyspace("ks", TinyKeyspace());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    auto writer = std::make_unique<Writer>(*ks);
    acked_.clear();
    b_exists_ = false;
    pending_.reset();
    tracker_->SetHook([&](uint64_t k) {
      if (failures_ == 0 && check_point(k)) VerifyAt(k);
    });
    uint64_t counter = 0;
    for (int i = 0; i < ops && failures_ == 0; i++) {
      Op op = NextOp(&counter);
      pending_ = op;
      switch (op.kind) {
        case Op::kPut: {
          auto r = writer->Put(op.key, op.value);
          if (r.ok()) {
            acked_[op.key] = op.value;
          } else {
            ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
          }
          break;
        }
        case Op::kDelete: {
          auto r = writer->Delete(op.key);
          if (r.ok()) {
            acked_.erase(op.key);
          } else {
            ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
          }
          break;
        }
        case Op::kClean: {
          auto r = (*ks)->Clean(0.6, 4);
          if (!r.ok()) {
            ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
          }
          break;
        }
        case Op::kReturn:
          ASSERT_TRUE(writer->Close().ok());
          break;
        case Op::kCreateB: {
          auto b = (*pool)->CreateKeyspace("b", TinyKeyspace());
          ASSERT_TRUE(b.ok()) << b.status().ToString();
          b_exists_ = true;
          break;
        }
        case Op::kDropB:
          ASSERT_TRUE((*pool)->DropKeyspace("b").ok());
          b_exists_ = false;
          break;
      }
      pending_.reset();
    }
    tracker_->SetHook(nullptr);
    writer.reset();
    ks = Status::NotFound("released");
    EXPECT_EQ(failures_, 0) << "seed " << seed;
  }

  Op NextOp(uint64_t* counter) {
    const int r = static_cast<int>(rng_() % 100);
    const std::string key = "key" + std::to_string(rng_() % kUniverse);
    if (r < 50) {
      const size_t len = rng_() % 400;
      std::string v = std::to_string((*counter)++) + ":";
      v.resize(len, static_cast<char>('a' + rng_() % 26));
      return {Op::kPut, key, v};
    }
    if (r < 75) return {Op::kDelete, key, ""};
    if (r < 87) return {Op::kClean, "", ""};
    if (r < 95) return {Op::kReturn, "", ""};
    return {b_exists_ ? Op::kDropB : Op::kCreateB, "", ""};
  }

  void VerifyAt(uint64_t k) {
    using Mode = PersistenceTracker::Mode;
    const Mode modes[] = {Mode::kAllReverted, Mode::kAllKept, Mode::kRandom,
                          Mode::kRandom};
    for (Mode m : modes) {
      std::vector<uint8_t> image = tracker_->CrashImage(m, &rng_);
      const std::string where = "seed " + std::to_string(seed_) +
                                ", persist point " + std::to_string(k) +
                                ", mode " + std::to_string(static_cast<int>(m));
      VerifyImage(image, where);
      if (failures_ > 0) return;
      images_checked_++;
    }
  }

  void Fail(const std::string& where, const std::string& what) {
    failures_++;
    ADD_FAILURE() << where << ": " << what;
  }

  void VerifyImage(const std::vector<uint8_t>& image,
                   const std::string& where) {
    auto pool =
        Pool::OpenOn(MemoryMapping::FromImage(image, nullptr), NoGrace());
    if (!pool.ok()) return Fail(where, "open: " + pool.status().ToString());
    // Recovery may repair what an interrupted commit leaves (a slot whose
    // record is torn, an old slot whose clear was not yet durable); it
    // says so, and nothing else may need repair.
    for (const std::string& note : (*pool)->Info().recovery_notes) {
      if (note.find("a commit the crash interrupted") == std::string::npos &&
          note.find("an older version of the key") == std::string::npos) {
        return Fail(where, "unexpected repair: " + note);
      }
      repairs_++;
    }
    CheckReport report = (*pool)->Check();
    if (!report.ok()) return Fail(where, "check: " + report.problems[0]);
    const bool b = (*pool)->GetKeyspace("b").ok();
    bool b_ok = b == b_exists_;
    if (pending_ && pending_->kind == Op::kCreateB) b_ok = b_ok || b;
    if (pending_ && pending_->kind == Op::kDropB) b_ok = b_ok || !b;
    if (!b_ok) return Fail(where, "keyspace b exists=" + std::to_string(b));
    auto ks = (*pool)->GetKeyspace("ks");
    if (!ks.ok()) return Fail(where, "keyspace ks missing");
    if (!VerifyKeys(**ks, where, true)) return;
    // The recovered pool takes writes without disturbing what is there
    // (segments that were open at the crash must have been sealed).
    {
      Writer w(*ks);
      for (int i = 0; i < 6; i++) {
        auto r = w.Put("post" + std::to_string(i), std::string(300, 'p'));
        if (!r.ok() && !r.status().IsNoSpace()) {
          return Fail(where, "post-crash put: " + r.status().ToString());
        }
      }
    }
    if (!VerifyKeys(**ks, where, false)) return;
    report = (*pool)->Check();
    if (!report.ok())
      return Fail(where, "check after writes: " + report.problems[0]);
  }

  // Every universe key matches the model (or the op in flight); with
  // `exact`, no other key exists.
  bool VerifyKeys(Keyspace& ks, const std::string& where, bool exact) {
    uint64_t found = 0;
    for (int i = 0; i < kUniverse; i++) {
      const std::string key = "key" + std::to_string(i);
      std::string got;
      Status st = ks.Get(key, &got);
      if (!st.ok() && !st.IsNotFound()) {
        Fail(where, key + ": " + st.ToString());
        return false;
      }
      std::optional<std::string> have;
      if (st.ok()) {
        have = got;
        found++;
      }
      std::optional<std::string> want;
      if (acked_.count(key)) want = acked_[key];
      bool ok = have == want;
      if (!ok && pending_ && pending_->key == key) {
        if (pending_->kind == Op::kPut) ok = have == pending_->value;
        if (pending_->kind == Op::kDelete) ok = !have.has_value();
      }
      if (!ok) {
        Fail(where, key + ": have " +
                        (have ? "'" + have->substr(0, 20) + "'" : "none") +
                        ", acknowledged " +
                        (want ? "'" + want->substr(0, 20) + "'" : "none"));
        return false;
      }
    }
    if (exact) {
      uint64_t total = 0;
      Status st = ks.ForEach([&](const record_format::RecordView&) {
        total++;
        return true;
      });
      if (!st.ok() || total != found) {
        Fail(where, "iteration saw " + std::to_string(total) +
                        " keys, expected " + std::to_string(found) + " (" +
                        st.ToString() + ")");
        return false;
      }
    }
    return true;
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::shared_ptr<PersistenceTracker> tracker_;
  std::map<std::string, std::string> acked_;
  bool b_exists_ = false;
  std::optional<Op> pending_;
  int failures_ = 0;
  uint64_t images_checked_ = 0;
  uint64_t repairs_ = 0;  // recovery notes seen (interrupted commits)
};

TEST_F(CrashTest, EveryPersistPointOfShortRuns) {
  const int seeds = 12 * CrashScale();
  for (int s = 0; s < seeds && failures_ == 0; s++) {
    Run(1000 + s, 40, [](uint64_t) { return true; });
  }
  RecordProperty("images_checked", static_cast<int>(images_checked_));
  std::printf("checked %llu crash images, %llu repairs by recovery\n",
              static_cast<unsigned long long>(images_checked_),
              static_cast<unsigned long long>(repairs_));
  EXPECT_GT(images_checked_, 1000u);
  // The images must exercise recovery's repair of interrupted commits.
  EXPECT_GT(repairs_, 0u);
}

TEST_F(CrashTest, RandomPersistPointsOfLongRuns) {
  const int seeds = 4 * CrashScale();
  for (int s = 0; s < seeds && failures_ == 0; s++) {
    std::mt19937_64 pick(77 + s);
    Run(2000 + s, 1500, [&pick](uint64_t) { return pick() % 40 == 0; });
  }
  std::printf("checked %llu crash images, %llu repairs by recovery\n",
              static_cast<unsigned long long>(images_checked_),
              static_cast<unsigned long long>(repairs_));
  EXPECT_GT(images_checked_, 100u);
  EXPECT_GT(repairs_, 0u);
}

}  // namespace
}  // namespace kv::store
