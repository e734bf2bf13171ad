// Crash consistency with the persistence tracker: random workloads, a
// simulated power failure at persist points and after operations return,
// reopen, compare with a model.
//
// At a persist point the tracker builds the image a power failure would
// leave (each not-yet-persisted cache line kept or reverted): the
// operation in flight may show either outcome. After an operation returns,
// an image that loses every unpersisted line (and a random mix) must show
// exactly what was acknowledged — a missing final persist is caught there,
// not only by a later operation's persist points. Every image must open
// (with at most the automatic repairs of interrupted commits), Check()
// clean, show the model exactly and take new writes.
//
// The workload: local puts and deletes (Writer), a remote writer's records
// (sequence 0, flushed, then committed — or abandoned: the writer
// disconnects without committing and its segment is returned or sealed,
// often with the same key and length as the key's live version), the
// cleaner, segment returns, keyspace create/drop, and lifecycle steps: a
// clean close and reopen (its persist points checked too), and a power
// failure after which the run goes on on the crash image (so crash ->
// open -> write -> crash happens).
// Bounded by default; RPKV_CRASH_SCALE=N (env) runs N times the seeds and
// points for longer local runs.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>
#include <optional>
#include <random>

#include "crash_util.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "persistence_tracker.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::NoGrace;
using testing::TinyKeyspace;
using testing::TrackedPool;

constexpr size_t kPoolSize = 1 << 20;
constexpr int kUniverse = 40;

int CrashScale() {
  const char* s = getenv("RPKV_CRASH_SCALE");
  const int n = s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

struct Op {
  enum Kind {
    kPut,
    kDelete,
    kClean,
    kReturn,
    kRemotePut,    // a remote writer: record flushed, then committed
    kAbandon,      // a remote writer flushes a record and disconnects
    kCloseReopen,  // clean close, reopen the same bytes
    kCrashReopen,  // power failure now, continue on the crash image
    kCreateB,
    kDropB
  } kind;
  std::string key;
  std::string value;
  bool seal = false;  // kAbandon: the grant is sealed (else returned)
};

// The parameter: keyspaces with a commit log (format 4: commits persist an
// entry, not their buckets; recovery replays) or without (format 3).
class CrashTest : public ::testing::TestWithParam<bool> {
 protected:
  // Runs `ops` random operations with seed `seed`; at each persist point
  // for which `check_point(k)` is true, and after each operation i for
  // which `check_after(i)` is true, verifies crash images.
  static KeyspaceOptions Options() {
    KeyspaceOptions o = TinyKeyspace();
    o.commit_log = GetParam();
    return o;
  }
  void Run(uint64_t seed, int ops,
           const std::function<bool(uint64_t)>& check_point,
           const std::function<bool(int)>& check_after) {
    seed_ = seed;
    rng_.seed(seed);
    check_point_ = check_point;
    tp_ = std::make_unique<TrackedPool>(kPoolSize);
    {
      auto pool = tp_->Create();
      ASSERT_TRUE(pool.ok()) << pool.status().ToString();
      pool_ = std::move(*pool);
    }
    auto ks = pool_->CreateKeyspace("ks", Options());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
    writer_ = std::make_unique<Writer>(ks_);
    Track();
    acked_.clear();
    b_exists_ = false;
    pending_.reset();
    remote_.reset();
    uint64_t counter = 0;
    for (int i = 0; i < ops && failures_ == 0; i++) {
      Op op = NextOp(&counter);
      pending_ = op;
      Apply(op);
      if (::testing::Test::HasFatalFailure()) break;
      pending_.reset();
      if (failures_ == 0 && check_after(i)) VerifyAfterOp(i);
    }
    tp_->tracker().SetHook(nullptr);
    writer_.reset();
    ks_.reset();
    pool_.reset();
    tp_.reset();
    EXPECT_EQ(failures_, 0) << "seed " << seed;
  }

  void Track() {
    tp_->tracker().SetHook([this](uint64_t k) {
      if (failures_ == 0 && check_point_(k)) VerifyAt(k);
    });
  }

  void Apply(const Op& op) {
    switch (op.kind) {
      case Op::kPut: {
        auto r = writer_->Put(op.key, op.value);
        if (r.ok()) {
          acked_[op.key] = op.value;
        } else {
          ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
        }
        break;
      }
      case Op::kDelete: {
        auto r = writer_->Delete(op.key);
        if (r.ok()) {
          acked_.erase(op.key);
        } else {
          ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
        }
        break;
      }
      case Op::kClean: {
        auto r = ks_->Clean(0.6, 4);
        if (!r.ok()) {
          ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
        }
        break;
      }
      case Op::kReturn:
        ASSERT_TRUE(writer_->Close().ok());
        break;
      case Op::kRemotePut:
      case Op::kAbandon: {
        const uint64_t size =
            record_format::RecordSize(op.key.size(), op.value.size());
        if (!RemoteRoom(size)) break;  // log full: nothing written
        uint8_t* dst = ks_->log_base() + remote_->log_offset + remote_tail_;
        const size_t n = record_format::EncodeRecord(dst, ks_->id(), 0, false,
                                                     op.key, op.value);
        // The client's persistent flush (on PMem it is one; the commit
        // would persist the record again anyway).
        ks_->persister()->Persist(dst, n);
        CommitRequest req;
        req.segment = remote_->segment;
        req.grant_id = remote_->grant_id;
        req.offset = remote_tail_;
        req.length = static_cast<uint32_t>(n);
        req.key_hash = index_format::HashKey(op.key);
        remote_tail_ += n;
        if (op.kind == Op::kAbandon) {
          // Disconnected without committing: kvserver returns the rest of
          // the segment (granted again from its tail) or seals it.
          ASSERT_TRUE((op.seal ? ks_->SealSegment(*remote_)
                               : ks_->ReturnSegment(*remote_))
                          .ok());
          remote_.reset();
          break;
        }
        auto r = ks_->Commit(req);
        if (r.ok()) {
          acked_[op.key] = op.value;
        } else {
          ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
        }
        break;
      }
      case Op::kCloseReopen: {
        // Persist points of the close and of the open are checked too.
        Disconnect();
        pool_.reset();
        auto pool = tp_->Open();
        ASSERT_TRUE(pool.ok()) << pool.status().ToString();
        pool_ = std::move(*pool);
        const auto notes = pool_->Info().recovery_notes;
        if (!notes.empty()) {
          Fail(Where("reopen after a clean close"), "repaired: " + notes[0]);
        }
        Reconnect();
        clean_reopens_++;
        break;
      }
      case Op::kCrashReopen: {
        // Power fails now; the run continues on what is left (so later
        // crashes hit a pool that has crashed before).
        std::vector<uint8_t> image = tp_->tracker().CrashImage(
            rng_() % 2 ? PersistenceTracker::Mode::kRandom
                       : PersistenceTracker::Mode::kAllReverted,
            &rng_);
        tp_->tracker().SetHook(nullptr);
        Disconnect();
        pool_.reset();
        tp_ = std::make_unique<TrackedPool>(image);
        Track();
        auto pool = tp_->Open();
        ASSERT_TRUE(pool.ok()) << pool.status().ToString();
        pool_ = std::move(*pool);
        Reconnect();
        crash_reopens_++;
        if (ks_ != nullptr)
          VerifyKeys(*ks_, Where("after crash + reopen"), true);
        break;
      }
      case Op::kCreateB: {
        auto b = pool_->CreateKeyspace("b", Options());
        ASSERT_TRUE(b.ok()) << b.status().ToString();
        b_exists_ = true;
        break;
      }
      case Op::kDropB:
        ASSERT_TRUE(pool_->DropKeyspace("b").ok());
        b_exists_ = false;
        break;
    }
  }

  // The remote writer's grant has `size` bytes free at its tail (a new
  // grant when needed); false when the log is full.
  bool RemoteRoom(uint64_t size) {
    if (remote_ && remote_tail_ + size <= remote_->size) return true;
    if (remote_) {
      EXPECT_TRUE(ks_->SealSegment(*remote_).ok());
      remote_.reset();
    }
    auto g = ks_->GrantSegment();
    if (!g.ok()) {
      EXPECT_TRUE(g.status().IsNoSpace()) << g.status().ToString();
      return false;
    }
    remote_ = *g;
    remote_tail_ = g->start;
    return RemoteRoom(size);
  }

  void Disconnect() {
    writer_.reset();
    if (remote_) {
      EXPECT_TRUE(ks_->ReturnSegment(*remote_).ok());
      remote_.reset();
    }
    ks_.reset();
  }

  void Reconnect() {
    auto ks = pool_->GetKeyspace("ks");
    if (!ks.ok()) return Fail(Where("reopen"), "keyspace ks missing");
    ks_ = *ks;
    writer_ = std::make_unique<Writer>(ks_);
  }

  std::string Where(const std::string& what) const {
    return "seed " + std::to_string(seed_) + ", " + what;
  }

  Op NextOp(uint64_t* counter) {
    const int r = static_cast<int>(rng_() % 100);
    const std::string key = "key" + std::to_string(rng_() % kUniverse);
    auto value = [&] {
      const size_t len = rng_() % 400;
      std::string v = std::to_string((*counter)++) + ":";
      v.resize(len, static_cast<char>('a' + rng_() % 26));
      return v;
    };
    if (r < 42) return {Op::kPut, key, value()};
    if (r < 62) return {Op::kDelete, key, ""};
    if (r < 72) return {Op::kClean, "", ""};
    if (r < 78) return {Op::kReturn, "", ""};
    if (r < 84) return {Op::kRemotePut, key, value()};
    if (r < 90) {
      // Often the same key and length as its committed version, so the
      // abandoned record could pass for it at a stale offset.
      std::string v = value();
      if (acked_.count(key) && rng_() % 2) {
        v.resize(acked_[key].size(), 'A');
      }
      Op op{Op::kAbandon, key, v};
      op.seal = rng_() % 2;
      return op;
    }
    if (r < 93) return {Op::kCloseReopen, "", ""};
    if (r < 96) return {Op::kCrashReopen, "", ""};
    return {b_exists_ ? Op::kDropB : Op::kCreateB, "", ""};
  }

  // After operation i returned: everything acknowledged is durable, so an
  // image that loses every unpersisted line (and random mixes) must show
  // exactly the model.
  void VerifyAfterOp(int i) {
    using Mode = PersistenceTracker::Mode;
    for (Mode m : {Mode::kAllReverted, Mode::kRandom}) {
      std::vector<uint8_t> image = tp_->tracker().CrashImage(m, &rng_);
      VerifyImage(image, Where("after op " + std::to_string(i) + ", mode " +
                               std::to_string(static_cast<int>(m))));
      if (failures_ > 0) return;
      images_checked_++;
      after_op_images_++;
    }
  }

  void VerifyAt(uint64_t k) {
    using Mode = PersistenceTracker::Mode;
    const Mode modes[] = {Mode::kAllReverted, Mode::kAllKept, Mode::kRandom,
                          Mode::kRandom};
    for (Mode m : modes) {
      std::vector<uint8_t> image = tp_->tracker().CrashImage(m, &rng_);
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
          note.find("an older version of the key") == std::string::npos &&
          note.find("from its commit log") == std::string::npos) {
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
        if (pending_->kind == Op::kPut || pending_->kind == Op::kRemotePut) {
          ok = have == pending_->value;
        }
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
  std::function<bool(uint64_t)> check_point_;
  std::unique_ptr<TrackedPool> tp_;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
  std::unique_ptr<Writer> writer_;
  std::optional<SegmentGrant> remote_;
  uint64_t remote_tail_ = 0;
  std::map<std::string, std::string> acked_;
  bool b_exists_ = false;
  std::optional<Op> pending_;
  int failures_ = 0;
  uint64_t images_checked_ = 0;
  uint64_t repairs_ = 0;  // recovery notes seen (interrupted commits)
  uint64_t after_op_images_ = 0;
  uint64_t clean_reopens_ = 0;  // clean close, then open
  uint64_t crash_reopens_ = 0;  // power failure, then open and go on
};

TEST_P(CrashTest, EveryPersistPointOfShortRuns) {
  const int seeds = 12 * CrashScale();
  for (int s = 0; s < seeds && failures_ == 0; s++) {
    Run(
        1000 + s, 40, [](uint64_t) { return true; }, [](int) { return true; });
  }
  RecordProperty("images_checked", static_cast<int>(images_checked_));
  std::printf(
      "checked %llu crash images (%llu after an operation returned), %llu "
      "repairs by recovery; %llu clean and %llu crash reopens\n",
      static_cast<unsigned long long>(images_checked_),
      static_cast<unsigned long long>(after_op_images_),
      static_cast<unsigned long long>(repairs_),
      static_cast<unsigned long long>(clean_reopens_),
      static_cast<unsigned long long>(crash_reopens_));
  EXPECT_GT(images_checked_, 1000u);
  EXPECT_GT(after_op_images_, 0u);
  EXPECT_GT(clean_reopens_, 0u);
  EXPECT_GT(crash_reopens_, 1u);
  // The images must exercise recovery's repair of interrupted commits.
  EXPECT_GT(repairs_, 0u);
}

TEST_P(CrashTest, RandomPersistPointsOfLongRuns) {
  const int seeds = 4 * CrashScale();
  for (int s = 0; s < seeds && failures_ == 0; s++) {
    std::mt19937_64 pick(77 + s);
    Run(
        2000 + s, 1500, [&pick](uint64_t) { return pick() % 40 == 0; },
        [&pick](int) { return pick() % 25 == 0; });
  }
  std::printf(
      "checked %llu crash images (%llu after an operation returned), %llu "
      "repairs by recovery; %llu clean and %llu crash reopens\n",
      static_cast<unsigned long long>(images_checked_),
      static_cast<unsigned long long>(after_op_images_),
      static_cast<unsigned long long>(repairs_),
      static_cast<unsigned long long>(clean_reopens_),
      static_cast<unsigned long long>(crash_reopens_));
  EXPECT_GT(images_checked_, 100u);
  EXPECT_GT(repairs_, 0u);
}

INSTANTIATE_TEST_SUITE_P(Formats, CrashTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "CommitLog" : "NoCommitLog";
                         });

}  // namespace
}  // namespace kv::store
