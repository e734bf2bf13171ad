// Keyspace: commit, get, delete, iteration, stats, concurrency.
#include "kv/store/keyspace.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace rf = kv::record_format;
using testing::NoGrace;
using testing::SmallKeyspace;

class KeyspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool =
        Pool::CreateOn(MemoryMapping::Zeroed(8 << 20, nullptr), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", SmallKeyspace());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
  }

  // Writes a record by hand into a fresh grant; returns the request.
  CommitRequest WriteRaw(SegmentGrant* g, std::string_view key,
                         std::string_view value, bool tombstone = false) {
    if (g->grant_id == 0) *g = ks_->GrantSegment().value();
    uint8_t* dst = ks_->log_base() + g->log_offset + g->start;
    const size_t n = rf::EncodeRecord(dst, ks_->id(), 0, tombstone, key, value);
    CommitRequest r;
    r.segment = g->segment;
    r.grant_id = g->grant_id;
    r.offset = g->start;
    r.length = static_cast<uint32_t>(n);
    r.key_hash = index_format::HashKey(key);
    g->start += n;
    return r;
  }

  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

TEST_F(KeyspaceTest, PutGetOverwriteDelete) {
  Writer w(ks_);
  auto r1 = w.Put("apple", "red");
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_FALSE(r1->had_previous);
  std::string v;
  Version ver;
  ASSERT_TRUE(ks_->Get("apple", &v, &ver).ok());
  EXPECT_EQ(v, "red");
  EXPECT_EQ(ver.sequence, r1->committed.sequence);

  auto r2 = w.Put("apple", "green");
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(r2->had_previous);
  EXPECT_EQ(r2->previous.sequence, r1->committed.sequence);
  EXPECT_EQ(r2->previous.log_offset, r1->committed.log_offset);
  EXPECT_GT(r2->committed.sequence, r1->committed.sequence);
  ASSERT_TRUE(ks_->Get("apple", &v).ok());
  EXPECT_EQ(v, "green");

  auto d = w.Delete("apple");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->had_previous);
  EXPECT_TRUE(d->tombstone);
  EXPECT_TRUE(ks_->Get("apple", &v).IsNotFound());
  auto d2 = w.Delete("apple");
  ASSERT_TRUE(d2.ok());
  EXPECT_FALSE(d2->had_previous);
  EXPECT_EQ(ks_->Stats().keys, 0u);
}

TEST_F(KeyspaceTest, EmptyValueAndLimits) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "").ok());
  std::string v = "x";
  ASSERT_TRUE(ks_->Get("k", &v).ok());
  EXPECT_EQ(v, "");
  EXPECT_TRUE(w.Put("", "v").status().IsInvalidArgument());
  EXPECT_TRUE(w.Put(std::string(1025, 'k'), "v").status().IsInvalidArgument());
  EXPECT_TRUE(w.Put(std::string(1024, 'k'), "v").ok());
  EXPECT_TRUE(w.Put("big", std::string(8 * 1024 + 1, 'v'))
                  .status()
                  .IsInvalidArgument());
  ASSERT_TRUE(w.Put("big", std::string(8 * 1024, 'v')).ok());
  ASSERT_TRUE(ks_->Get("big", &v).ok());
  EXPECT_EQ(v.size(), 8u * 1024);
  EXPECT_TRUE(ks_->Get("", &v).IsInvalidArgument());
}

TEST_F(KeyspaceTest, MaxValueOfOneMebibyte) {
  KeyspaceOptions o;
  o.index_capacity = 64;
  o.segment_size = 2 << 20;
  o.log_size = 6 << 20;  // kMinSegments
  auto ks = pool_->CreateKeyspace("mib", o);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  Writer w(*ks);
  const std::string value(1 << 20, 'm');
  ASSERT_TRUE(w.Put("k", value).ok());
  std::string v;
  ASSERT_TRUE((*ks)->Get("k", &v).ok());
  EXPECT_EQ(v, value);
}

TEST_F(KeyspaceTest, CommitRejectsStaleGrant) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "v");
  r.grant_id += 1;
  EXPECT_TRUE(ks_->Commit(r).status().IsInvalidArgument());
}

TEST_F(KeyspaceTest, CommitRejectsRecordOutsideSegment) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "v");
  r.offset = g.size;  // one past the segment
  EXPECT_TRUE(ks_->Commit(r).status().IsInvalidArgument());
  r.offset = 32;  // unaligned
  EXPECT_TRUE(ks_->Commit(r).status().IsInvalidArgument());
}

TEST_F(KeyspaceTest, CommitRejectsRecordBeforeTail) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "v");
  ASSERT_TRUE(ks_->Commit(r).ok());
  Status st = ks_->Commit(r).status();  // replay of the same record
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  // Out of order: a record written before the last committed one (still
  // unsealed, so only the tail check can refuse it) is refused, and
  // changes nothing.
  CommitRequest a = WriteRaw(&g, "a", "first");
  CommitRequest b = WriteRaw(&g, "b", "second");
  ASSERT_TRUE(ks_->Commit(b).ok());
  st = ks_->Commit(a).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("before the append tail"), std::string::npos)
      << st.ToString();
  std::string v;
  EXPECT_TRUE(ks_->Get("a", &v).IsNotFound());
  EXPECT_EQ(ks_->Stats().keys, 2u);
}

TEST_F(KeyspaceTest, CommitRejectsBadCrc) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "value");
  ks_->log_base()[g.log_offset + r.offset + 34] ^= 1;  // a value byte
  Status st = ks_->Commit(r).status();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("CRC32C"), std::string::npos);
  std::string v;
  EXPECT_TRUE(ks_->Get("k", &v).IsNotFound());
}

TEST_F(KeyspaceTest, CommitRejectsKeyHashMismatch) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "v");
  r.key_hash ^= 1;
  EXPECT_TRUE(ks_->Commit(r).status().IsInvalidArgument());
}

TEST_F(KeyspaceTest, CommitRejectsLengthMismatch) {
  SegmentGrant g;
  CommitRequest r = WriteRaw(&g, "k", "v");
  r.length += 64;
  EXPECT_TRUE(ks_->Commit(r).status().IsInvalidArgument());
}

TEST_F(KeyspaceTest, CommitRejectsOtherKeyspacesRecord) {
  auto other = pool_->CreateKeyspace("other", SmallKeyspace());
  ASSERT_TRUE(other.ok());
  SegmentGrant g = ks_->GrantSegment().value();
  uint8_t* dst = ks_->log_base() + g.log_offset;
  const size_t n = rf::EncodeRecord(dst, (*other)->id(), 0, false, "k", "v");
  CommitRequest r{g.segment, g.grant_id, 0, static_cast<uint32_t>(n),
                  index_format::HashKey("k")};
  EXPECT_TRUE(ks_->Commit(r).status().IsCorruption());
}

TEST_F(KeyspaceTest, IndexFullIsNoSpace) {
  KeyspaceOptions o = SmallKeyspace();
  o.index_capacity = 4;  // one bucket (+1 probe bucket): 16 slots
  auto ks = pool_->CreateKeyspace("tiny", o);
  ASSERT_TRUE(ks.ok());
  testing::RefuseIndexGrowth(ks->get());
  Writer w(*ks);
  int stored = 0;
  Status last;
  for (int i = 0; i < 40 && last.ok(); i++) {
    Result<CommitResult> r = w.Put("key" + std::to_string(i), "v");
    last = r.status();
    if (r.ok()) stored++;
  }
  EXPECT_TRUE(last.IsNoSpace()) << last.ToString();
  EXPECT_NE(last.message().find("cannot grow"), std::string::npos)
      << last.ToString();
  EXPECT_EQ(stored, 16);
  EXPECT_TRUE(pool_->Check().ok());
}

TEST_F(KeyspaceTest, ForEachSeesEveryLiveKey) {
  Writer w(ks_);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 200; i++) {
    const std::string k = "k" + std::to_string(i);
    want[k] = "v" + std::to_string(i * 7);
    ASSERT_TRUE(w.Put(k, want[k]).ok());
  }
  for (int i = 0; i < 200; i += 3) {
    ASSERT_TRUE(w.Delete("k" + std::to_string(i)).ok());
    want.erase("k" + std::to_string(i));
  }
  std::map<std::string, std::string> got;
  ASSERT_TRUE(ks_->ForEach([&](const rf::RecordView& r) {
                   got[std::string(r.key)] = std::string(r.value);
                   return true;
                 })
                  .ok());
  EXPECT_EQ(got, want);
  EXPECT_EQ(ks_->Stats().keys, want.size());
}

TEST_F(KeyspaceTest, StatsAccountLiveAndDeadBytes) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("a", std::string(100, 'x')).ok());
  KeyspaceStats s = ks_->Stats();
  EXPECT_EQ(s.keys, 1u);
  EXPECT_EQ(s.live_bytes, rf::RecordSize(1, 100));
  EXPECT_EQ(s.dead_bytes, 0u);
  EXPECT_EQ(s.open_segments, 1u);
  ASSERT_TRUE(w.Put("a", std::string(100, 'y')).ok());
  s = ks_->Stats();
  EXPECT_EQ(s.live_bytes, rf::RecordSize(1, 100));
  EXPECT_EQ(s.dead_bytes, rf::RecordSize(1, 100));
  EXPECT_EQ(s.segments, 16u);
}

TEST_F(KeyspaceTest, ParallelWritersAndLockFreeReaders) {
  constexpr int kThreads = 4;
  constexpr int kKeys = 150;
  std::atomic<bool> stop{false};
  std::atomic<int> read_errors{0};
  std::thread reader([&] {
    std::string v;
    while (!stop.load()) {
      for (int i = 0; i < kKeys; i++) {
        const std::string k = "t0-" + std::to_string(i);
        Status st = ks_->Get(k, &v);
        if (!st.ok() && !st.IsNotFound()) read_errors++;
        if (st.ok() && v.rfind(k, 0) != 0) read_errors++;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; t++) {
    writers.emplace_back([&, t] {
      Writer w(ks_);
      for (int round = 0; round < 3; round++) {
        for (int i = 0; i < kKeys; i++) {
          const std::string k =
              "t" + std::to_string(t) + "-" + std::to_string(i);
          ASSERT_TRUE(w.Put(k, k + "/" + std::to_string(round)).ok());
        }
      }
    });
  }
  for (auto& th : writers) th.join();
  stop = true;
  reader.join();
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_EQ(ks_->Stats().keys, uint64_t{kThreads * kKeys});
  std::string v;
  for (int t = 0; t < kThreads; t++) {
    for (int i = 0; i < kKeys; i++) {
      const std::string k = "t" + std::to_string(t) + "-" + std::to_string(i);
      ASSERT_TRUE(ks_->Get(k, &v).ok());
      EXPECT_EQ(v, k + "/2");
    }
  }
  EXPECT_TRUE(pool_->Check().ok());
}

TEST_F(KeyspaceTest, SealAndReturnSegments) {
  auto g = ks_->GrantSegment();
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(ks_->ReturnSegment(*g).ok());
  // Returning twice: the grant is gone.
  EXPECT_TRUE(ks_->ReturnSegment(*g).IsInvalidArgument());
  SegmentGrant h;
  CommitRequest r = WriteRaw(&h, "k", "v");
  ASSERT_TRUE(ks_->Commit(r).ok());
  ASSERT_TRUE(ks_->ReturnSegment(h).ok());
  // The partly used segment is granted again from its tail.
  auto again = ks_->GrantSegment();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->segment, h.segment);
  EXPECT_EQ(again->start, r.offset + r.length);
  ASSERT_TRUE(ks_->SealSegment(*again).ok());
  EXPECT_TRUE(ks_->SealSegment(*again).IsInvalidArgument());
}

TEST_F(KeyspaceTest, PutIfAbsentFailsOnAPresentKeyAndChangesNothing) {
  Writer w(ks_);
  auto first = w.Put("k", "one", Condition::kIfAbsent);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = w.Put("k", "two", Condition::kIfAbsent);
  EXPECT_TRUE(again.status().IsConditionFailed()) << again.status().ToString();
  std::string v;
  Version ver;
  ASSERT_TRUE(ks_->Get("k", &v, &ver).ok());
  EXPECT_EQ(v, "one");
  EXPECT_EQ(ver.sequence, first->committed.sequence);
  EXPECT_EQ(ks_->Stats().keys, 1u);
  // After a delete the key is absent again.
  ASSERT_TRUE(w.Delete("k").ok());
  EXPECT_TRUE(w.Put("k", "three", Condition::kIfAbsent).ok());
}

TEST_F(KeyspaceTest, VersionedPutAndDeleteCompareTheSequence) {
  Writer w(ks_);
  auto v1 = w.Put("k", "one");
  ASSERT_TRUE(v1.ok());
  const uint64_t seen = v1->committed.sequence;
  auto v2 = w.Put("k", "two", Condition::kIfVersion, seen);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  // A writer holding the stale version loses, for puts and deletes alike.
  EXPECT_TRUE(w.Put("k", "stale", Condition::kIfVersion, seen)
                  .status()
                  .IsConditionFailed());
  EXPECT_TRUE(
      w.Delete("k", Condition::kIfVersion, seen).status().IsConditionFailed());
  std::string v;
  ASSERT_TRUE(ks_->Get("k", &v).ok());
  EXPECT_EQ(v, "two");
  auto del = w.Delete("k", Condition::kIfVersion, v2->committed.sequence);
  ASSERT_TRUE(del.ok());
  EXPECT_TRUE(del->had_previous);
  EXPECT_TRUE(ks_->Get("k", &v).IsNotFound());
  // An expected version of an absent key fails.
  EXPECT_TRUE(w.Put("k", "x", Condition::kIfVersion, seen)
                  .status()
                  .IsConditionFailed());
}

TEST_F(KeyspaceTest, RegionCoversIndexAndLogAsTheCatalogSays) {
  const Keyspace::Region r = ks_->region();
  const KeyspaceInfo info = ks_->info();
  EXPECT_EQ(r.size, info.region_size);
  EXPECT_LE(r.index_offset + r.index_size, r.log_offset);
  // The commit log right after the log ends the region.
  ASSERT_NE(info.commit_log_entries, 0u);
  EXPECT_EQ(r.base + r.log_offset + r.log_size,
            r.base - info.region_offset + info.commit_log_offset);
  EXPECT_EQ(r.log_offset + r.log_size + info.commit_log_entries * 32, r.size);
  EXPECT_EQ(r.base + r.log_offset, ks_->log_base());
  EXPECT_EQ(r.index_size,
            index_format::PhysicalBuckets(info.bucket_count) * 64);
  // A put's slot lands inside the index part of the region.
  Writer w(ks_);
  ASSERT_TRUE(w.Put("k", "v").ok());
  bool seen = false;
  const auto* slots =
      reinterpret_cast<const uint64_t*>(r.base + r.index_offset);
  for (uint64_t i = 0; i < r.index_size / 8; i++) seen |= slots[i] != 0;
  EXPECT_TRUE(seen);
}

TEST_F(KeyspaceTest, GrantBytesStartAtTheGrantsTail) {
  SegmentGrant h;
  CommitRequest r = WriteRaw(&h, "k", "v");
  ASSERT_TRUE(ks_->Commit(r).ok());
  ASSERT_TRUE(ks_->ReturnSegment(h).ok());
  SegmentGrant again = ks_->GrantSegment().value();
  EXPECT_EQ(ks_->GrantBytes(again),
            ks_->log_base() + again.log_offset + r.offset + r.length);
}

}  // namespace
}  // namespace kv::store
