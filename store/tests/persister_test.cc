// The production persister (libpmem2 over a file): every crash test
// replaces it with the persistence tracker, and kill -9 keeps the page
// cache, so neither would notice a missing fence or a short msync. Here
// the calls it makes to libpmem2 are recorded (and still made) while a
// real pool commits, in page mode (msync) and in forced cache-line mode
// (flush + drain).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "kv/index_format.h"
#include "kv/store/pmem_file_mapping.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace ix = index_format;
using Call = PmemFileMapping::PersistCall;

class PersisterTest : public ::testing::TestWithParam<bool> {
 protected:
  bool cache_line() const { return GetParam(); }

  void SetUp() override {
    // libpmem2 reads the variable when the file is mapped.
    if (cache_line()) setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
    auto m = PmemFileMapping::Create(dir_.File("pool"), 4 << 20);
    if (cache_line()) unsetenv("PMEM2_FORCE_GRANULARITY");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    mapping_ = m->get();
    ASSERT_EQ(mapping_->granularity(), cache_line() ? "cache line" : "page");
    auto pool = Pool::CreateOn(std::move(*m), testing::NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    ks_ = pool_->CreateKeyspace("ks", testing::SmallKeyspace()).value();
  }
  void TearDown() override {
    if (mapping_ != nullptr) mapping_->RecordPersistCallsForTesting(nullptr);
  }

  // Runs op with the persister's calls recorded.
  std::vector<Call> Record(const std::function<void()>& op) {
    std::vector<Call> log;
    mapping_->RecordPersistCallsForTesting(&log);
    op();
    mapping_->RecordPersistCallsForTesting(nullptr);
    return log;
  }

  // [addr, addr + len) lies inside what the calls made durable: in page
  // mode one persist (msync) covering it; in cache-line mode flushes
  // covering it followed by a drain.
  static bool Durable(const std::vector<Call>& log, const void* addr,
                      size_t len) {
    const auto* a = static_cast<const uint8_t*>(addr);
    auto covers = [&](const Call& c) {
      const auto* p = static_cast<const uint8_t*>(c.addr);
      return p <= a && a + len <= p + c.len;
    };
    for (size_t i = 0; i < log.size(); i++) {
      if (log[i].kind == Call::kPersist && covers(log[i])) return true;
      if (log[i].kind == Call::kFlush && covers(log[i])) {
        for (size_t j = i + 1; j < log.size(); j++) {
          if (log[j].kind == Call::kDrain) return true;
        }
      }
    }
    return false;
  }

  const uint8_t* BucketsOf(std::string_view key) const {
    const Keyspace::Region r = ks_->region();
    return r.base + r.index_offset +
           ix::HomeBucket(ix::HashKey(key), ks_->info().bucket_count) *
               ix::kBucketSize;
  }

  // Whether a persist call touches the index's bytes.
  bool TouchesIndex(const Call& c) const {
    const Keyspace::Region r = ks_->region();
    const uint8_t* lo = r.base + r.index_offset;
    const uint8_t* hi = lo + r.index_size;
    const auto* p = static_cast<const uint8_t*>(c.addr);
    return p < hi && lo < p + c.len;
  }
  // The keyspace's commit log ring (format 4).
  std::pair<const uint8_t*, size_t> Ring() const {
    const KeyspaceInfo i = ks_->info();
    return {ks_->region().base - i.region_offset + i.commit_log_offset,
            i.commit_log_entries * 32};
  }
  // Whether the calls made some 32 bytes of the ring durable (the commit's
  // entry; which one is the commit log's business).
  static bool SomeOfRingDurable(const std::vector<Call>& log,
                                std::pair<const uint8_t*, size_t> ring) {
    for (size_t off = 0; off < ring.second; off += 32) {
      if (Durable(log, ring.first + off, 32)) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  PmemFileMapping* mapping_ = nullptr;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

// A put is one persist point. On a page-granularity file with a commit log
// (format 4): one msync spanning record and its entry, and no index page
// (the point of the commit log). On cache lines (the commit log unused
// there): record and buckets, two flushes and one drain. Nothing is left
// unfenced when it returns.
TEST_P(PersisterTest, APutMakesRecordAndBucketsDurableInOnePersist) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("warm-up", "takes the grant").ok());
  const std::vector<Call> log =
      Record([&] { ASSERT_TRUE(w.Put("key", std::string(300, 'v')).ok()); });
  Version v;
  std::string got;
  ASSERT_TRUE(ks_->Get("key", &got, &v).ok());
  EXPECT_TRUE(Durable(log, ks_->log_base() + v.log_offset, v.length));
  ASSERT_FALSE(log.empty());
  if (cache_line()) {
    EXPECT_TRUE(
        Durable(log, BucketsOf("key"), ix::kProbeBuckets * ix::kBucketSize));
    ASSERT_EQ(log.size(), 3u);
    EXPECT_EQ(log[0].kind, Call::kFlush);
    EXPECT_EQ(log[1].kind, Call::kFlush);
    EXPECT_EQ(log[2].kind, Call::kDrain);
  } else {
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].kind, Call::kPersist);
    EXPECT_TRUE(SomeOfRingDurable(log, Ring()));
    EXPECT_FALSE(TouchesIndex(log[0]));
  }
}

// A delete ends fenced — the last call is a drain (cache line) or an
// msync (page) — with its tombstone durable, and the buckets (cache line:
// persisted, then tombstone + buckets) or its entry (page, commit log).
TEST_P(PersisterTest, ADeleteEndsFenced) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "value").ok());
  const std::vector<Call> log =
      Record([&] { ASSERT_TRUE(w.Delete("key").ok()); });
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().kind, cache_line() ? Call::kDrain : Call::kPersist);
  if (cache_line()) {
    EXPECT_TRUE(
        Durable(log, BucketsOf("key"), ix::kProbeBuckets * ix::kBucketSize));
  } else {
    EXPECT_TRUE(SomeOfRingDurable(log, Ring()));
    EXPECT_FALSE(TouchesIndex(log.back()));
  }
}

// A keyspace without a commit log (format 3) persists the buckets of a put
// with its record, in one persist point, on either granularity.
TEST_P(PersisterTest, WithoutACommitLogAPutPersistsItsBuckets) {
  KeyspaceOptions o = testing::SmallKeyspace();
  o.commit_log = false;
  ks_ = pool_->CreateKeyspace("format3", o).value();
  Writer w(ks_);
  ASSERT_TRUE(w.Put("warm-up", "takes the grant").ok());
  const std::vector<Call> log =
      Record([&] { ASSERT_TRUE(w.Put("key", std::string(300, 'v')).ok()); });
  EXPECT_TRUE(
      Durable(log, BucketsOf("key"), ix::kProbeBuckets * ix::kBucketSize));
  EXPECT_EQ(log.size(), cache_line() ? 3u : 1u);
}

// PersistRanges over ranges far apart: one msync spanning all of them
// (page), or a flush per range then a drain (cache line).
TEST_P(PersisterTest, PersistRangesCoversEveryRange) {
  uint8_t* base = mapping_->base();
  const Persister::Range r[3] = {
      {base + 3 * 4096 + 100, 8}, {base + 70000, 300}, {base + 9000, 64}};
  const std::vector<Call> log =
      Record([&] { mapping_->persister()->PersistRanges(r, 3); });
  for (const auto& range : r) {
    EXPECT_TRUE(Durable(log, range.addr, range.len))
        << static_cast<const uint8_t*>(range.addr) - base;
  }
  EXPECT_EQ(log.size(), cache_line() ? 4u : 1u);
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().kind, cache_line() ? Call::kDrain : Call::kPersist);
}

// Persist of a single range reaches libpmem2's persist (flush + drain on
// cache lines, msync on pages) with the whole range.
TEST_P(PersisterTest, PersistPassesTheWholeRange) {
  uint8_t* base = mapping_->base();
  const std::vector<Call> log =
      Record([&] { mapping_->persister()->Persist(base + 5000, 10000); });
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].kind, Call::kPersist);
  EXPECT_TRUE(Durable(log, base + 5000, 10000));
}

INSTANTIATE_TEST_SUITE_P(Granularity, PersisterTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "CacheLine" : "Page";
                         });

// A page-granularity pool maps without readahead (pmem_file_mapping.cc,
// PreferSmallFolios): a fault brings in its own page only, so the page
// cache holds single pages and an msync writes back only what a commit
// dirtied — not a large folio built by readahead.
TEST(PoolMappingTest, AFaultBringsInOnlyItsOwnPage) {
  testing::TempDir dir;
  for (bool reopen : {false, true}) {
    auto m = reopen ? PmemFileMapping::Open(dir.File("pool"), false)
                    : PmemFileMapping::Create(dir.File("pool"), 64 << 20);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    uint8_t* window = (*m)->base() + (32u << 20);  // never touched
    volatile uint8_t sink = window[(1u << 20) + 5 * page];
    (void)sink;
    std::vector<unsigned char> resident((2u << 20) / page);
    ASSERT_EQ(mincore(window, 2u << 20, resident.data()), 0);
    size_t n = 0;
    for (unsigned char r : resident) n += r & 1;
    EXPECT_EQ(n, 1u) << (reopen ? "open" : "create")
                     << ": pages resident around one read fault";
  }
}

}  // namespace
}  // namespace kv::store
