// Keyspace::Commit against a writer that lies: wrapping offsets, a COMMIT
// whose op contradicts its record, the delete reserve, a put refused for
// a full neighbourhood, a failed epoch persist, and the order of a slot
// clear's persist against a segment's reuse.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "kv/index_format.h"
#include "kv/store/keyspace.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace rf = kv::record_format;
using testing::NoGrace;
using testing::RefuseIndexGrowth;
using testing::SmallKeyspace;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

class CommitGuardTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(nullptr); }

  void Open(std::shared_ptr<Persister> persister,
            KeyspaceOptions o = SmallKeyspace()) {
    ks_.reset();
    pool_.reset();
    auto pool = Pool::CreateOn(
        MemoryMapping::Zeroed(8 << 20, std::move(persister)), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", o);
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
  }

  // Writes a record (sequence 0) at the grant's tail; returns its request.
  CommitRequest Write(SegmentGrant* g, std::string_view key,
                      std::string_view value, bool tombstone = false) {
    uint8_t* dst = ks_->log_base() + g->log_offset + g->start;
    const size_t n = rf::EncodeRecord(dst, ks_->id(), 0, tombstone, key, value);
    CommitRequest r;
    r.segment = g->segment;
    r.grant_id = g->grant_id;
    r.offset = g->start;
    r.length = static_cast<uint32_t>(n);
    r.key_hash = index_format::HashKey(key);
    r.op = tombstone ? CommitOp::kDelete : CommitOp::kPut;
    g->start += n;
    return r;
  }

  std::string Value(std::string_view key) {
    std::string v;
    Status st = ks_->Get(key, &v);
    if (st.IsNotFound()) return "<not_found>";
    return st.ok() ? v : "<" + st.ToString() + ">";
  }

  void ExpectCheckClean() {
    CheckReport report;
    ks_->Check(&report);
    EXPECT_TRUE(report.problems.empty())
        << report.problems.size()
        << " problems, first: " << report.problems.front();
  }

  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

// Defect: `offset + length > segment_size` wrapped, so a COMMIT naming
// its own grant reached a record of the segment before it (a record
// another writer never committed) and made it visible.
TEST_F(CommitGuardTest, WrappingOffsetCannotReachThePreviousSegment) {
  ks_->PreferSegmentForTesting(4);
  SegmentGrant a = ks_->GrantSegment().value();
  ks_->PreferSegmentForTesting(5);
  SegmentGrant b = ks_->GrantSegment().value();
  ASSERT_EQ(b.segment, a.segment + 1) << "the test needs adjacent segments";
  // The victim is the last record of segment a: it ends at the boundary.
  const uint64_t seg = ks_->info().segment_size;
  a.start = seg - 128;
  CommitRequest victim = Write(&a, "victim", std::string(90, 'v'));
  ASSERT_EQ(victim.length, 128u);
  ASSERT_EQ(victim.offset + victim.length, seg);
  CommitRequest forged = victim;
  forged.segment = b.segment;
  forged.grant_id = b.grant_id;
  // b's start + (2^64 - 128) wraps to a's record; offset + length wraps
  // to 0, which passed `offset + length > segment_size`.
  forged.offset = kMax - victim.length + 1;
  Status st = ks_->Commit(forged).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_EQ(Value("victim"), "<not_found>")
      << "a forged commit made it visible";
  // The owner's own commit still works, and b's grant is untouched.
  Result<CommitResult> own = ks_->Commit(victim);
  EXPECT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(Value("victim"), std::string(90, 'v'));
  CommitRequest mine = Write(&b, "mine", "v");
  ASSERT_TRUE(ks_->Commit(mine).ok()) << "b's tail moved";
  ExpectCheckClean();
}

// On segment 0 the same wrap pointed below the log (the store read the
// index and the catalog as a record; over the wire its bytes leaked into
// the error text). ASan reports any read outside the mapping.
TEST_F(CommitGuardTest, WrappingOffsetOnTheFirstSegmentIsRefused) {
  ks_->PreferSegmentForTesting(0);
  SegmentGrant g = ks_->GrantSegment().value();
  ASSERT_EQ(g.segment, 0u);
  // offset + length wraps to 0 or just above it.
  const uint64_t cases[][2] = {{64, 64}, {64, 128}, {4096, 4096}, {8192, 8192}};
  for (const auto& [back, length] : cases) {
    CommitRequest r;
    r.segment = g.segment;
    r.grant_id = g.grant_id;
    r.offset = kMax - back + 1;
    r.length = static_cast<uint32_t>(length);
    Status st = ks_->Commit(r).status();
    EXPECT_TRUE(st.IsInvalidArgument()) << back << ": " << st.ToString();
    EXPECT_EQ(st.message().find("key length"), std::string::npos)
        << "the error names bytes from outside the grant: " << st.message();
  }
  CommitRequest ok = Write(&g, "k", "v");
  EXPECT_TRUE(ks_->Commit(ok).ok());
}

// A refused COMMIT whose offset + length wrapped to 0 set the tail to 0:
// the returned segment was then freed with a live record in it, and its
// next grant zeroed an acknowledged key.
TEST_F(CommitGuardTest, RefusedWrappingCommitKeepsTheTailAndTheLiveRecords) {
  SegmentGrant g = ks_->GrantSegment().value();
  CommitRequest kept = Write(&g, "acknowledged", "value");
  ASSERT_TRUE(ks_->Commit(kept).ok());
  CommitRequest forged;
  forged.segment = g.segment;
  forged.grant_id = g.grant_id;
  forged.offset = kMax - 128 + 1;  // + 128 wraps to 0
  forged.length = 128;
  EXPECT_TRUE(ks_->Commit(forged).status().IsInvalidArgument());
  ASSERT_TRUE(ks_->ReturnSegment(g).ok());
  // Every grant the keyspace hands out now: none may zero the record.
  for (int i = 0; i < 4; i++) {
    Result<SegmentGrant> next = ks_->GrantSegment();
    ASSERT_TRUE(next.ok());
    if (next->segment == g.segment) {
      EXPECT_EQ(next->start, kept.offset + kept.length);
    }
  }
  EXPECT_EQ(Value("acknowledged"), "value");
  ExpectCheckClean();
}

// The COMMIT's op is checked against the record in both directions, on
// the record the store verified.
TEST_F(CommitGuardTest, OpMustMatchTheRecordBothWays) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "v").ok());
  SegmentGrant g = ks_->GrantSegment().value();
  CommitRequest del = Write(&g, "k", "", /*tombstone=*/true);
  del.op = CommitOp::kPut;
  Status st = ks_->Commit(del).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("says put"), std::string::npos);
  EXPECT_EQ(Value("k"), "v");
  CommitRequest put = Write(&g, "k", "new");
  put.op = CommitOp::kDelete;
  st = ks_->Commit(put).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("says delete"), std::string::npos);
  EXPECT_EQ(Value("k"), "v");
  // Ops that match go through.
  CommitRequest good = Write(&g, "k", "newer");
  ASSERT_TRUE(ks_->Commit(good).ok());
  EXPECT_EQ(Value("k"), "newer");
}

// A grant of the delete reserve takes tombstones only; the rule is the
// store's, on the verified record.
TEST_F(CommitGuardTest, DeletesOnlyGrantRefusesPutsAndTakesDeletes) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "v").ok());
  SegmentGrant g = ks_->GrantSegment().value();
  CommitRequest put = Write(&g, "other", "v");
  put.deletes_only = true;
  Status st = ks_->Commit(put).status();
  EXPECT_TRUE(st.IsNoSpace()) << st.ToString();
  EXPECT_EQ(Value("other"), "<not_found>");
  CommitRequest del = Write(&g, "k", "", true);
  del.deletes_only = true;
  ASSERT_TRUE(ks_->Commit(del).ok());
  EXPECT_EQ(Value("k"), "<not_found>");
}

// A put refused because its neighbourhood is full leaves no record that
// looks committed (a log scan or a catch-up would take it for one).
TEST_F(CommitGuardTest, PutRefusedForAFullIndexLeavesNoCommittedRecord) {
  KeyspaceOptions o = SmallKeyspace();
  o.index_capacity = 4;  // 16 slots in all
  Open(nullptr, o);
  RefuseIndexGrowth(ks_.get());
  Writer w(ks_);
  for (int i = 0; i < 16; i++) {
    ASSERT_TRUE(w.Put("key" + std::to_string(i), "v").ok());
  }
  SegmentGrant g = ks_->GrantSegment().value();
  CommitRequest r = Write(&g, "one too many", "v");
  Status st = ks_->Commit(r).status();
  ASSERT_TRUE(st.IsNoSpace()) << st.ToString();
  const uint8_t* rec = ks_->log_base() + g.log_offset + r.offset;
  rf::RecordView view;
  EXPECT_FALSE(rf::VerifyRecord(rec, r.length, ks_->id(), &view).ok())
      << "the refused record verifies as committed, sequence "
      << view.header.sequence;
  ExpectCheckClean();
}

// Defect: the delete reserve was also the cleaner's only free segment, so
// a client holding it (deleting on a full keyspace) made every cleaner
// pass fail with no_space until it disconnected.
TEST_F(CommitGuardTest, DeleteReserveHolderDoesNotStarveTheCleaner) {
  Writer w(ks_);
  std::vector<std::string> keys;
  const std::string value(900, 'x');
  for (int i = 0;; i++) {
    std::string k = "key" + std::to_string(i);
    Result<CommitResult> r = w.Put(k, value);
    if (!r.ok()) {
      ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
      break;
    }
    keys.push_back(k);
    ASSERT_LT(i, 10000) << "the keyspace never filled";
  }
  ASSERT_TRUE(w.Close().ok());
  // Another writer deletes every other key from the delete reserve and
  // keeps the grant open.
  SegmentGrant del = ks_->GrantSegment(/*for_delete=*/true).value();
  for (size_t i = 0; i < keys.size(); i += 2) {
    CommitRequest r = Write(&del, keys[i], "", true);
    ASSERT_TRUE(ks_->Commit(r).ok()) << keys[i];
  }
  Result<uint32_t> cleaned = ks_->Clean(0.75, 1);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  EXPECT_GT(*cleaned, 0u);
  // The keyspace takes puts again while the deleter still holds its grant.
  Writer again(ks_);
  EXPECT_TRUE(again.Put("after", "cleaning").ok());
  for (size_t i = 0; i < keys.size(); i++) {
    EXPECT_EQ(Value(keys[i]), i % 2 ? value : "<not_found>") << keys[i];
  }
  ASSERT_TRUE(ks_->SealSegment(del).ok());
  ExpectCheckClean();
}

// A writer that vanishes after one put leaves a sealed segment holding one
// record. Its unused rest is dead space the cleaner must see: before, only
// the bytes below the tail counted, so such segments never looked worth
// cleaning and 31 one-put connections filled a keyspace for good.
TEST_F(CommitGuardTest, SealedSegmentsUnusedRestCountsAsDead) {
  const uint64_t seg = ks_->info().segment_size;
  std::vector<std::string> keys;
  for (int i = 0;; i++) {
    Result<SegmentGrant> g = ks_->GrantSegment();
    if (!g.ok()) break;
    const std::string k = "one" + std::to_string(i);
    CommitRequest r = Write(&*g, k, "v");
    ASSERT_TRUE(ks_->Commit(r).ok());
    ASSERT_TRUE(ks_->SealSegment(*g).ok());  // the writer vanished
    keys.push_back(k);
  }
  KeyspaceStats s = ks_->Stats();
  const uint64_t record = rf::RecordSize(4, 1);
  EXPECT_GE(s.dead_bytes, keys.size() * (seg - 2 * record)) << keys.size();
  // So the cleaner compacts them and the keyspace takes puts again.
  Result<uint32_t> cleaned = ks_->Clean(0.5, 64);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  EXPECT_GT(*cleaned, 1u);
  Writer w(ks_);
  EXPECT_TRUE(w.Put("after", "cleaning").ok());
  for (const std::string& k : keys) EXPECT_EQ(Value(k), "v") << k;
}

// A sequence of an epoch the catalog could not persist is never handed
// out: the next open could hand it out again.
TEST_F(CommitGuardTest, FailedEpochPersistFailsTheCommit) {
  bool fail = true;
  ks_->SetEpochSink([&](uint64_t) {
    return fail ? Status::IoError("injected") : Status::Ok();
  });
  ks_->SetNextSequenceForTesting(uint64_t{1000} << Keyspace::kEpochShift);
  SegmentGrant g = ks_->GrantSegment().value();
  CommitRequest r = Write(&g, "k", "v");
  Status st = ks_->Commit(r).status();
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_EQ(Value("k"), "<not_found>");
  fail = false;
  CommitRequest again = Write(&g, "k", "v2");
  Result<CommitResult> ok = ks_->Commit(again);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_GE(ok->committed.sequence >> Keyspace::kEpochShift, 1000u);
  EXPECT_EQ(Value("k"), "v2");
}

// A persister that holds the next persist `match` accepts until
// released.
class GatePersister : public Persister {
 public:
  using Match = std::function<bool(const Range* ranges, size_t n)>;
  void Persist(const void* addr, size_t len) override {
    const Range r = {addr, len};
    PersistRanges(&r, 1);
  }
  void PersistRanges(const Range* ranges, size_t n) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!match_ || !match_(ranges, n)) return;
      match_ = nullptr;
    }
    std::unique_lock<std::mutex> lock(mu_);
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    held_ = false;
  }
  void Arm(Match match) {
    std::lock_guard<std::mutex> lock(mu_);
    match_ = std::move(match);
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Match match_;
  bool held_ = false;
  bool released_ = false;
};

// Defect: the pending clears were taken under the lock but persisted
// outside it, so a second grant found nothing pending and went on to
// rewrite a segment before the first grant's clears were durable.
// With a commit log (format 4) a grant persists the whole index (a
// checkpoint) instead of the clears alone: the same rule.
TEST_F(CommitGuardTest, NoGrantCompletesWhileEarlierClearsArePersisting) {
  for (bool commit_log : {false, true}) {
    SCOPED_TRACE(commit_log ? "commit log" : "no commit log");
    auto gate = std::make_shared<GatePersister>();
    KeyspaceOptions o = SmallKeyspace();
    o.commit_log = commit_log;
    Open(gate, o);
    Writer w(ks_);
    ASSERT_TRUE(w.Put("k", "v1").ok());
    ASSERT_TRUE(w.Put("k", "v2").ok());  // clears v1's slot, not yet durable
    const auto* index = ks_->region().base + ks_->region().index_offset;
    gate->Arm([&](const Persister::Range* r, size_t n) {
      if (commit_log) return n == 1 && r[0].addr == index;
      bool slots_only = n > 0;
      for (size_t i = 0; i < n; i++) slots_only &= r[i].len == 8;
      return slots_only;
    });
    std::thread first([&] { (void)ks_->GrantSegment(); });
    ASSERT_TRUE(gate->WaitHeld()) << "the clears were never persisted";
    std::atomic<bool> second_done{false};
    std::thread second([&] {
      (void)ks_->GrantSegment();
      second_done = true;
    });
    // The second grant must wait for the first one's clears; give it time
    // to (wrongly) finish.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(second_done.load())
        << "a segment was granted (and zeroed) while an earlier slot clear "
           "was still being persisted";
    gate->Release();
    first.join();
    second.join();
    EXPECT_TRUE(second_done.load());
  }
}

}  // namespace
}  // namespace kv::store
