// Replica commits (CommitRequest::replica): a record committed by the
// shard's owner elsewhere, copied byte for byte, keeps its sequence and
// absolute expiry; the newest sequence of a key wins in any arrival
// order; the keyspace's own sequences move past every replica's, also
// across a reopen. What a shard move and, later, a backup rely on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/keyspace.h"
#include "kv/store/mapping.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace rf = kv::record_format;
using testing::NoGrace;
using testing::SmallKeyspace;

constexpr uint64_t kFarFuture = 4'000'000'000'000;  // Unix ms, year 2096
constexpr size_t kPoolSize = 8 << 20;

class ReplicaCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool = Pool::CreateOn(
        std::make_unique<testing::CapturingMapping>(kPoolSize, &image_),
        NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    ks_ = pool_->CreateKeyspace("ks", SmallKeyspace()).value();
    grant_ = ks_->GrantSegment().value();
  }

  // Copies a committed record (as its owner sealed it) to the grant's tail.
  CommitRequest Copy(std::string_view key, std::string_view value,
                     uint64_t sequence, bool tombstone = false,
                     uint64_t expiry = 0) {
    uint8_t* dst = ks_->log_base() + grant_.log_offset + grant_.start;
    const size_t n = rf::EncodeRecord(dst, ks_->id(), sequence, tombstone, key,
                                      value, expiry);
    CommitRequest r;
    r.segment = grant_.segment;
    r.grant_id = grant_.grant_id;
    r.offset = grant_.start;
    r.length = static_cast<uint32_t>(n);
    r.key_hash = index_format::HashKey(key);
    r.op = tombstone ? CommitOp::kDelete : CommitOp::kPut;
    r.replica = true;
    grant_.start += n;
    return r;
  }

  CommitResult Apply(const CommitRequest& r) {
    Result<CommitResult> res = ks_->Commit(r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : CommitResult{};
  }

  std::string Value(std::string_view key, Version* v = nullptr) {
    std::string got;
    Status st = ks_->Get(key, &got, v);
    if (st.IsNotFound()) return "<not_found>";
    return st.ok() ? got : "<" + st.ToString() + ">";
  }

  void ExpectCheckClean() {
    CheckReport report;
    ks_->Check(&report);
    EXPECT_TRUE(report.problems.empty())
        << report.problems.size() << " problems, first: "
        << (report.problems.empty() ? "" : report.problems.front());
  }

  std::vector<uint8_t> image_;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
  SegmentGrant grant_;
};

TEST_F(ReplicaCommitTest, KeepsTheOwnersSequenceAndAbsoluteExpiry) {
  const uint64_t seq = (uint64_t{5} << Keyspace::kEpochShift) + 7;
  CommitResult r = Apply(Copy("k", "value", seq, false, kFarFuture));
  EXPECT_FALSE(r.stale);
  EXPECT_EQ(r.committed.sequence, seq);
  EXPECT_EQ(r.committed.expiry_ms, kFarFuture);
  Version v;
  EXPECT_EQ(Value("k", &v), "value");
  EXPECT_EQ(v.sequence, seq);
  EXPECT_EQ(v.expiry_ms, kFarFuture) << "the expiry must stay absolute";
  EXPECT_EQ(ks_->LastSequence(), seq);
  // A local write after it is newer: its sequence is above the copy's.
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "local").ok());
  EXPECT_EQ(Value("k", &v), "local");
  EXPECT_GT(v.sequence, seq);
  ExpectCheckClean();
}

TEST_F(ReplicaCommitTest, TheNewestSequenceWinsInAnyOrder) {
  EXPECT_FALSE(Apply(Copy("k", "a", 100)).stale);
  CommitResult older = Apply(Copy("k", "b", 50));
  EXPECT_TRUE(older.stale) << "an older copy replaced a newer version";
  EXPECT_EQ(Value("k"), "a");
  CommitResult same = Apply(Copy("k", "again", 100));
  EXPECT_TRUE(same.stale) << "the same sequence applied twice";
  EXPECT_EQ(Value("k"), "a");
  CommitResult newer = Apply(Copy("k", "c", 200));
  EXPECT_FALSE(newer.stale);
  EXPECT_TRUE(newer.had_previous);
  EXPECT_EQ(newer.previous.sequence, 100u);
  EXPECT_EQ(Value("k"), "c");
  EXPECT_EQ(ks_->Stats().keys, 1u);
  ExpectCheckClean();
}

TEST_F(ReplicaCommitTest, DeletesApplyOnlyOverOlderVersions) {
  Apply(Copy("k", "v", 100));
  EXPECT_TRUE(Apply(Copy("k", "", 90, true)).stale);
  EXPECT_EQ(Value("k"), "v") << "an older delete removed a newer put";
  CommitResult del = Apply(Copy("k", "", 150, true));
  EXPECT_FALSE(del.stale);
  EXPECT_TRUE(del.tombstone);
  EXPECT_EQ(Value("k"), "<not_found>");
  EXPECT_TRUE(Apply(Copy("absent", "", 160, true)).stale);
  EXPECT_EQ(ks_->Stats().keys, 0u);
  ExpectCheckClean();
}

// A stale copy's bytes must not pass for a committed record later (a
// recovery or a scan of the log would otherwise find a second version).
TEST_F(ReplicaCommitTest, AStaleCopyNoLongerVerifies) {
  Apply(Copy("k", "new", 100));
  CommitRequest old = Copy("k", "old", 50);
  ASSERT_TRUE(Apply(old).stale);
  const uint8_t* rec = ks_->log_base() +
                       uint64_t{old.segment} * ks_->info().segment_size +
                       old.offset;
  rf::RecordView view;
  EXPECT_FALSE(rf::VerifyRecord(rec, old.length, ks_->id(), &view).ok());
}

TEST_F(ReplicaCommitTest, RefusesWhatNoOwnerCommitted) {
  // Sequence 0: a writer's record, not an owner's.
  Status st = ks_->Commit(Copy("k", "v", 0)).status();
  EXPECT_FALSE(st.ok()) << "an unsealed record applied as a replica's";
  // A replica's record through the writers' path keeps no sequence of its.
  CommitRequest sealed = Copy("k", "v", 42);
  sealed.replica = false;
  EXPECT_TRUE(ks_->Commit(sealed).status().IsInvalidArgument());
  // Conditions are the owner's business.
  CommitRequest cond = Copy("k", "v", 43);
  cond.condition = Condition::kIfAbsent;
  EXPECT_TRUE(ks_->Commit(cond).status().IsInvalidArgument());
  // A sequence that would exhaust ours.
  CommitRequest huge = Copy("k", "v", Keyspace::kMaxSequence + 1);
  EXPECT_TRUE(ks_->Commit(huge).status().IsInvalidArgument());
  EXPECT_EQ(Value("k"), "<not_found>");
  EXPECT_LT(ks_->LastSequence(), Keyspace::kMaxSequence);
  ExpectCheckClean();
}

TEST_F(ReplicaCommitTest, AdvanceSequencePastNeverMovesBack) {
  const uint64_t base = ks_->LastSequence();
  ASSERT_TRUE(ks_->AdvanceSequencePast(base + 1000).ok());
  EXPECT_EQ(ks_->LastSequence(), base + 1000);
  ASSERT_TRUE(ks_->AdvanceSequencePast(base + 10).ok());
  EXPECT_EQ(ks_->LastSequence(), base + 1000);
  EXPECT_EQ(ks_->NextSequence().value(), base + 1001);
  EXPECT_TRUE(
      ks_->AdvanceSequencePast(Keyspace::kMaxSequence + 1).IsInvalidArgument());
  EXPECT_EQ(ks_->LastSequence(), base + 1001);
}

// The copy's epoch (its sequence >> 40) is far above this keyspace's open
// epoch: it is persisted first, so the sequences a reopen hands out are
// above the copy's — or a later local write would lose to an older copy.
TEST_F(ReplicaCommitTest, AReopenHandsOutSequencesAboveEveryCopy) {
  const uint64_t seq = (uint64_t{9} << Keyspace::kEpochShift) + 3;
  Apply(Copy("k", "copy", seq));
  ks_.reset();
  pool_.reset();  // the image is captured here
  auto pool =
      Pool::OpenOn(MemoryMapping::FromImage(image_, nullptr), NoGrace());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  auto ks = (*pool)->GetKeyspace("ks").value();
  Version v;
  std::string got;
  ASSERT_TRUE(ks->Get("k", &got, &v).ok());
  EXPECT_EQ(v.sequence, seq);
  Writer w(ks);
  ASSERT_TRUE(w.Put("k", "local").ok());
  ASSERT_TRUE(ks->Get("k", &got, &v).ok());
  EXPECT_EQ(got, "local");
  EXPECT_GT(v.sequence, seq);
}

// An epoch that cannot be persisted: the copy is refused, nothing applied.
TEST_F(ReplicaCommitTest, AnEpochThatCannotBePersistedRefusesTheCopy) {
  ks_->SetEpochSink(
      [](uint64_t) { return Status::IoError("catalog write refused"); });
  const uint64_t seq = (uint64_t{7} << Keyspace::kEpochShift) + 1;
  Status st = ks_->Commit(Copy("k", "v", seq)).status();
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.ToString();
  EXPECT_EQ(Value("k"), "<not_found>");
  EXPECT_LT(ks_->LastSequence(), seq);
  ExpectCheckClean();
}

// The copier's read: a key's current record, byte for byte, applies on
// another pool's keyspace of the same id as the same version.
TEST_F(ReplicaCommitTest, ACurrentRecordCopiedElsewhereIsTheSameVersion) {
  auto source =
      Pool::CreateOn(MemoryMapping::Zeroed(kPoolSize, nullptr), NoGrace())
          .value();
  auto src = source->CreateKeyspace("ks", SmallKeyspace()).value();
  ASSERT_EQ(src->id(), ks_->id());
  Writer w(src);
  ASSERT_TRUE(w.Put("k", "v1").ok());
  ASSERT_TRUE(w.PutExpiring("k", "v2", 60000).ok());
  Version at_source;
  std::string got;
  ASSERT_TRUE(src->Get("k", &got, &at_source).ok());
  CommitRequest r;
  ASSERT_TRUE(src->WithCurrentRecord("k",
                                     [&](const uint8_t* rec, size_t n) {
                                       uint8_t* dst = ks_->log_base() +
                                                      grant_.log_offset +
                                                      grant_.start;
                                       std::memcpy(dst, rec, n);
                                       r.segment = grant_.segment;
                                       r.grant_id = grant_.grant_id;
                                       r.offset = grant_.start;
                                       r.length = static_cast<uint32_t>(n);
                                       r.key_hash = index_format::HashKey("k");
                                       r.replica = true;
                                       grant_.start += n;
                                     })
                  .ok());
  EXPECT_FALSE(Apply(r).stale);
  Version here;
  EXPECT_EQ(Value("k", &here), "v2");
  EXPECT_EQ(here.sequence, at_source.sequence);
  EXPECT_EQ(here.expiry_ms, at_source.expiry_ms);
  EXPECT_NE(here.expiry_ms, 0u);
  // Absent, deleted: nothing to copy.
  bool called = false;
  auto note = [&](const uint8_t*, size_t) { called = true; };
  EXPECT_TRUE(src->WithCurrentRecord("absent", note).IsNotFound());
  ASSERT_TRUE(w.Delete("k").ok());
  EXPECT_TRUE(src->WithCurrentRecord("k", note).IsNotFound());
  EXPECT_FALSE(called);
  EXPECT_TRUE(src->WithCurrentRecord("", note).IsInvalidArgument());
}

// While fn runs, a commit of the key waits: the copier's queueing is
// ordered before it (a delete can never overtake the copy of the put it
// deletes on the way to the target).
TEST_F(ReplicaCommitTest, ACommitOfTheKeyWaitsForTheCopiersRead) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "v").ok());
  std::atomic<bool> fn_done{false};
  std::atomic<bool> commit_saw_fn_done{false};
  std::thread committer;
  ASSERT_TRUE(ks_->WithCurrentRecord("k",
                                     [&](const uint8_t*, size_t) {
                                       committer = std::thread([&] {
                                         Writer other(ks_);
                                         EXPECT_TRUE(other.Delete("k").ok());
                                         commit_saw_fn_done = fn_done.load();
                                       });
                                       std::this_thread::sleep_for(
                                           std::chrono::milliseconds(200));
                                       fn_done = true;
                                     })
                  .ok());
  committer.join();
  EXPECT_TRUE(commit_saw_fn_done)
      << "a commit of the key completed while the copier held its record";
  EXPECT_EQ(Value("k"), "<not_found>");
}

}  // namespace
}  // namespace kv::store
