// Index growth (keyspace_grow.cc): the index doubles online as keys arrive,
// over the log's first segments, so a keyspace holds keys until its log is
// full; readers never miss a key while it grows.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "kv/index_format.h"
#include "kv/store/keyspace.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace ix = kv::index_format;
using testing::NoGrace;

KeyspaceOptions GrowingKeyspace(uint64_t log_size) {
  KeyspaceOptions o;
  o.index_capacity = 4;  // one bucket to start with
  o.segment_size = 64 * 1024;
  o.log_size = log_size;
  o.max_value_size = 4096;
  return o;
}

std::string ValueOf(const std::string& key) { return "value-of-" + key; }

class IndexGrowthTest : public ::testing::Test {
 protected:
  void Create(uint64_t log_size) {
    auto pool =
        Pool::CreateOn(MemoryMapping::Zeroed(64 << 20, nullptr), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    auto ks = pool_->CreateKeyspace("ks", GrowingKeyspace(log_size));
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    ks_ = *ks;
  }

  // The header a remote reader fetches at read-region offset 0.
  ix::IndexHeader Header() const {
    ix::IndexHeader h;
    EXPECT_TRUE(ix::DecodeIndexHeader(ks_->region().base, &h));
    return h;
  }

  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

TEST_F(IndexGrowthTest, GrowsPastItsInitialSizeAndKeepsEveryKey) {
  Create(8 << 20);
  EXPECT_EQ(ks_->Stats().index_buckets, 1u);
  Writer w(ks_);
  for (int i = 0; i < 5000; i++) {
    const std::string k = "key" + std::to_string(i);
    ASSERT_TRUE(w.Put(k, ValueOf(k)).ok()) << k;
  }
  const KeyspaceStats st = ks_->Stats();
  EXPECT_GE(st.index_growths, 10u);
  EXPECT_EQ(st.index_generation, st.index_growths + 1);
  EXPECT_GE(st.index_buckets, 5000u / 2);  // below kGrowLoad of the slots
  EXPECT_LE(static_cast<double>(st.index_slots_used) / st.index_slots,
            Keyspace::kGrowLoad);
  EXPECT_EQ(st.keys, 5000u);
  // The header publishes what the keyspace uses.
  EXPECT_EQ(Header().bucket_count, st.index_buckets);
  EXPECT_EQ(Header().generation, st.index_generation);
  EXPECT_EQ(ks_->info().bucket_count, st.index_buckets);
  for (int i = 0; i < 5000; i++) {
    const std::string k = "key" + std::to_string(i);
    std::string v;
    ASSERT_TRUE(ks_->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, ValueOf(k));
  }
  EXPECT_TRUE(pool_->Check().ok()) << pool_->Check().problems[0];
}

TEST_F(IndexGrowthTest, AGrownIndexSurvivesACleanReopen) {
  testing::TempDir dir;
  const std::string path = dir.File("pool");
  {
    auto pool = Pool::Create(path, 32 << 20);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->CreateKeyspace("ks", GrowingKeyspace(8 << 20));
    ASSERT_TRUE(ks.ok());
    Writer w(*ks);
    for (int i = 0; i < 3000; i++) {
      ASSERT_TRUE(
          w.Put("k" + std::to_string(i), ValueOf(std::to_string(i))).ok());
    }
    ASSERT_TRUE(w.Delete("k7").ok());
  }
  auto pool = Pool::Open(path);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_TRUE((*pool)->Info().recovery_notes.empty());
  auto ks = (*pool)->GetKeyspace("ks").value();
  EXPECT_GE(ks->Stats().index_growths, 8u);
  EXPECT_EQ(ks->Stats().keys, 2999u);
  std::string v;
  for (int i = 0; i < 3000; i++) {
    Status st = ks->Get("k" + std::to_string(i), &v);
    if (i == 7) {
      EXPECT_TRUE(st.IsNotFound()) << st.ToString();
    } else {
      ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
      EXPECT_EQ(v, ValueOf(std::to_string(i)));
    }
  }
  EXPECT_TRUE((*pool)->Check().ok());
}

// The figure: keys of random names into a keyspace whose index
// starts at one bucket, until the log is full. No no_space before then.
TEST_F(IndexGrowthTest, OnlyAFullLogStopsNewKeys) {
  Create(16 << 20);
  Writer w(ks_);
  std::mt19937_64 rng(7);
  uint64_t inserted = 0;
  Status last;
  for (;;) {
    const std::string k = "user:" + std::to_string(rng());
    Result<CommitResult> r = w.Put(k, std::string(40, 'v'));
    if (!r.ok()) {
      last = r.status();
      break;
    }
    inserted++;
  }
  ASSERT_TRUE(last.IsNoSpace()) << last.ToString();
  EXPECT_NE(last.message().find("log full"), std::string::npos)
      << last.ToString();
  const KeyspaceStats st = ks_->Stats();
  // Full: every segment but the two reserves (cleaner, deletes) is used by
  // records or by the index.
  EXPECT_LE(st.free_segments, 2u + 1u);
  const uint64_t record = 128;  // 32-byte header + ~26-byte key + 40 bytes
  const double log_records = static_cast<double>(st.log_bytes) / record;
  std::printf(
      "[ figures  ] %llu keys of %llu-byte records into a %llu-byte log "
      "(%.0f records fit without an index): %.1f%%; index %llu buckets "
      "after %llu growths, load %.3f\n",
      static_cast<unsigned long long>(inserted),
      static_cast<unsigned long long>(record),
      static_cast<unsigned long long>(st.log_bytes), log_records,
      100.0 * static_cast<double>(inserted) / log_records,
      static_cast<unsigned long long>(st.index_buckets),
      static_cast<unsigned long long>(st.index_growths),
      static_cast<double>(st.index_slots_used) / st.index_slots);
  EXPECT_GT(static_cast<double>(inserted), 0.6 * log_records);
  EXPECT_TRUE(pool_->Check().ok());
}

// Lock-free readers (the store's own Get runs the reader algorithm remote
// clients run) keep finding every key while the index doubles under them.
TEST_F(IndexGrowthTest, ReadersNeverMissAKeyWhileTheIndexGrows) {
  Create(16 << 20);
  std::atomic<int> committed{0};  // keys 0 .. committed-1 are acknowledged
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::string v;
      while (!stop.load()) {
        const int n = committed.load();
        if (n == 0) continue;
        const std::string k = "key" + std::to_string(rng() % n);
        Status st = ks_->Get(k, &v);
        if (!st.ok() || v != ValueOf(k)) misses.fetch_add(1);
        reads.fetch_add(1);
      }
    });
  }
  {
    Writer w(ks_);
    for (int i = 0; i < 20000; i++) {
      const std::string k = "key" + std::to_string(i);
      ASSERT_TRUE(w.Put(k, ValueOf(k)).ok()) << k;
      committed.store(i + 1);
    }
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(misses.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GE(ks_->Stats().index_growths, 10u);
}

// The fence, deterministically: a growth between Get's geometry load and
// its neighbourhood read moves the key away from where Get looks; Get must
// notice the new geometry instead of answering not_found.
TEST_F(IndexGrowthTest, AGrowthUnderAReaderIsNoticedBeforeNotFound) {
  Create(8 << 20);
  Writer w(ks_);
  for (int i = 0; i < 100; i++) {
    const std::string k = "key" + std::to_string(i);
    ASSERT_TRUE(w.Put(k, ValueOf(k)).ok());
  }
  const uint64_t n = ks_->Stats().index_buckets;
  // A key whose home moves when the index doubles.
  std::string moving;
  for (int i = 0; i < 100 && moving.empty(); i++) {
    const std::string k = "key" + std::to_string(i);
    const uint64_t h = ix::HashKey(k);
    if (ix::HomeBucket(h, 2 * n) != ix::HomeBucket(h, n)) moving = k;
  }
  ASSERT_FALSE(moving.empty());
  int grown = 0;
  ks_->SetReadHookForTesting([&] {
    if (grown++ == 0) ASSERT_TRUE(ks_->GrowIndex().ok());
  });
  std::string v;
  Status st = ks_->Get(moving, &v);
  ks_->SetReadHookForTesting(nullptr);
  ASSERT_EQ(ks_->Stats().index_buckets, 2 * n);
  ASSERT_TRUE(st.ok()) << moving << ": " << st.ToString();
  EXPECT_EQ(v, ValueOf(moving));
}

// Several writers: commits wait for a growth and go on after it.
TEST_F(IndexGrowthTest, ConcurrentWritersAcrossGrowths) {
  Create(16 << 20);
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; t++) {
    writers.emplace_back([&, t] {
      Writer w(ks_);
      for (int i = 0; i < 2000; i++) {
        const std::string k = "w" + std::to_string(t) + "-" + std::to_string(i);
        Result<CommitResult> r = w.Put(k, ValueOf(k));
        EXPECT_TRUE(r.ok()) << k << ": " << r.status().ToString();
        if (i % 3 == 0) {
          r = w.Put(k, ValueOf(k));  // an update
          EXPECT_TRUE(r.ok()) << k << ": " << r.status().ToString();
        }
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(ks_->Stats().keys, 8000u);
  std::string v;
  for (int t = 0; t < 4; t++) {
    for (int i = 0; i < 2000; i++) {
      const std::string k = "w" + std::to_string(t) + "-" + std::to_string(i);
      ASSERT_TRUE(ks_->Get(k, &v).ok()) << k;
      EXPECT_EQ(v, ValueOf(k));
    }
  }
  EXPECT_TRUE(pool_->Check().ok());
}

// The log's first segments belong to the index once it grew over them; a
// writer never gets one, and the stats count them as used.
TEST_F(IndexGrowthTest, TheIndexTakesTheLogsFirstSegments) {
  Create(16 << 20);
  Writer w(ks_);
  for (int i = 0; i < 20000; i++) {
    ASSERT_TRUE(w.Put("k" + std::to_string(i), "v").ok());
  }
  const KeyspaceStats st = ks_->Stats();
  const KeyspaceInfo info = ks_->info();
  const uint64_t index_end =
      info.index_offset + ix::PhysicalBuckets(st.index_buckets) * 64;
  ASSERT_GT(index_end, info.log_offset) << "the index must reach the log";
  const uint64_t under =
      (index_end - info.log_offset + info.segment_size - 1) / info.segment_size;
  for (int i = 0; i < 100; i++) {
    auto g = ks_->GrantSegment();
    if (!g.ok()) break;
    EXPECT_GE(g->segment, under);
  }
  EXPECT_GE(st.log_bytes_used, under * info.segment_size);
}

// The index needs the log's first segments; when records sit there (the
// log was full once, then keys were deleted), the growth moves them out
// first instead of saying the log is full.
TEST_F(IndexGrowthTest, AGrowthMovesRecordsOutOfTheSegmentsItNeeds) {
  Create(4 << 20);
  Writer w(ks_);
  std::vector<std::string> keys;
  for (int i = 0;; i++) {
    const std::string k = "k" + std::to_string(i);
    Result<CommitResult> r = w.Put(k, std::string(200, 'a'));
    if (!r.ok()) {
      ASSERT_TRUE(r.status().IsNoSpace()) << r.status().ToString();
      break;
    }
    keys.push_back(k);
  }
  // Delete all but every 8th key and compact: the log's first segments
  // (written last) keep some records.
  std::map<std::string, std::string> want;
  for (size_t i = 0; i < keys.size(); i++) {
    if (i % 8 == 0) {
      want[keys[i]] = std::string(200, 'a');
    } else {
      ASSERT_TRUE(w.Delete(keys[i]).ok());
    }
  }
  ASSERT_TRUE(w.Close().ok());
  for (int round = 0; round < 100; round++) {
    Result<uint32_t> cleaned = ks_->Clean(0.5, 4);  // fits the one free
    ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
    if (*cleaned == 0) break;
  }
  const uint64_t growths = ks_->Stats().index_growths;
  Writer w2(ks_);
  for (size_t i = 0; i < keys.size() * 2; i++) {
    const std::string k = "new" + std::to_string(i);
    Result<CommitResult> r = w2.Put(k, "n");
    ASSERT_TRUE(r.ok()) << k << " after " << i << ": " << r.status().ToString();
    want[k] = "n";
  }
  EXPECT_GT(ks_->Stats().index_growths, growths);
  std::string v;
  for (const auto& [k, value] : want) {
    ASSERT_TRUE(ks_->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, value);
  }
  EXPECT_TRUE(pool_->Check().ok()) << pool_->Check().problems[0];
}

// Seventeen keys of one home bucket: the 17th finds its 16 slots taken
// long before the load calls for a growth; the index grows and the put is
// decided again instead of failing.
TEST_F(IndexGrowthTest, AFullNeighbourhoodGrowsTheIndexAndThePutSucceeds) {
  auto pool =
      Pool::CreateOn(MemoryMapping::Zeroed(16 << 20, nullptr), NoGrace());
  ASSERT_TRUE(pool.ok());
  pool_ = std::move(*pool);
  KeyspaceOptions o = GrowingKeyspace(8 << 20);
  o.index_capacity = 1024;  // 256 buckets: 17 keys are far below the load
  ks_ = pool_->CreateKeyspace("ks", o).value();
  ASSERT_EQ(ks_->Stats().index_buckets, 256u);
  const std::vector<std::string> keys = testing::KeysWithHome(9, 17, 256);
  Writer w(ks_);
  for (const std::string& k : keys) {
    Result<CommitResult> r = w.Put(k, ValueOf(k));
    ASSERT_TRUE(r.ok()) << k << ": " << r.status().ToString();
  }
  EXPECT_GE(ks_->Stats().index_growths, 1u);
  std::string v;
  for (const std::string& k : keys) {
    ASSERT_TRUE(ks_->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, ValueOf(k));
  }
  EXPECT_TRUE(pool_->Check().ok());
}

// A writer holds the log's first segment: the index cannot take it, so
// new keys end with no_space naming the full log — and the writer's
// records there stay intact.
TEST_F(IndexGrowthTest, ASegmentAWriterHoldsIsNeverTakenByTheIndex) {
  Create(8 << 20);
  ks_->PreferSegmentForTesting(0);
  Writer first(ks_);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 20; i++) {
    const std::string k = "first" + std::to_string(i);
    want[k] = ValueOf(k);
    ASSERT_TRUE(first.Put(k, want[k]).ok());
  }
  Writer w(ks_);
  Status last;
  for (int i = 0; i < 100000 && last.ok(); i++) {
    const std::string k = "k" + std::to_string(i);
    Result<CommitResult> r = w.Put(k, ValueOf(k));
    last = r.status();
    if (r.ok()) want[k] = ValueOf(k);
  }
  ASSERT_TRUE(last.IsNoSpace()) << last.ToString();
  EXPECT_NE(last.message().find("the index needs segments 0..0"),
            std::string::npos)
      << last.ToString();
  std::string v;
  for (const auto& [k, value] : want) {
    ASSERT_TRUE(ks_->Get(k, &v).ok()) << k;
    EXPECT_EQ(v, value) << k;
  }
  EXPECT_TRUE(pool_->Check().ok()) << pool_->Check().problems[0];
}

// A growth that cannot record its new geometry changes nothing.
TEST_F(IndexGrowthTest, AGrowthThatCannotCommitChangesNothing) {
  Create(8 << 20);
  Writer w(ks_);
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(w.Put("k" + std::to_string(i), "v").ok());
  }
  const KeyspaceStats before = ks_->Stats();
  testing::RefuseIndexGrowth(ks_.get());
  Status st = ks_->GrowIndex();
  EXPECT_TRUE(st.IsNoSpace()) << st.ToString();
  const KeyspaceStats after = ks_->Stats();
  EXPECT_EQ(after.index_buckets, before.index_buckets);
  EXPECT_EQ(after.index_generation, before.index_generation);
  EXPECT_EQ(after.free_segments, before.free_segments);
  EXPECT_EQ(Header().bucket_count, before.index_buckets);
  std::string v;
  for (int i = 0; i < 300; i++) {
    ASSERT_TRUE(ks_->Get("k" + std::to_string(i), &v).ok()) << i;
  }
  EXPECT_TRUE(pool_->Check().ok()) << pool_->Check().problems[0];
}

TEST_F(IndexGrowthTest, HeaderDecodingRefusesTornAndForeignBytes) {
  uint8_t b[ix::kIndexHeaderSize];
  ix::EncodeIndexHeader({5, 1024}, b);
  ix::IndexHeader h;
  ASSERT_TRUE(ix::DecodeIndexHeader(b, &h));
  EXPECT_EQ(h.generation, 5u);
  EXPECT_EQ(h.bucket_count, 1024u);
  uint8_t torn[ix::kIndexHeaderSize];
  ix::EncodeIndexHeader({6, 2048}, torn);
  std::memcpy(torn + 8, b + 8, 8);  // new word, old check
  EXPECT_FALSE(ix::DecodeIndexHeader(torn, &h));
  uint8_t zeros[ix::kIndexHeaderSize] = {};
  EXPECT_FALSE(ix::DecodeIndexHeader(zeros, &h));
  ix::EncodeIndexHeader({1, uint64_t{1} << 41}, b);  // too many buckets
  EXPECT_FALSE(ix::DecodeIndexHeader(b, &h));
}

}  // namespace
}  // namespace kv::store
