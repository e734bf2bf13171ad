// Expiring keys in the store (format version 3): Get and ForEach treat an
// expired version as absent, commit conditions do too, the expiry sweep
// (ReclaimExpired, and Clean) turns expired records into dead bytes that
// the cleaner wins back, and expiries survive a reopen. The keyspace's
// clock is a test hook here: no test sleeps.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kv/server_clock.h"
#include "kv/store/pool.h"
#include "kv/store/pool_format.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

using testing::NoGrace;
using testing::SmallKeyspace;
using testing::TempDir;

class ExpiryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pool =
        Pool::CreateOn(MemoryMapping::Zeroed(4 << 20, nullptr), NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    ks_ = pool_->CreateKeyspace("ks", SmallKeyspace()).value();
    ks_->SetClockForTesting([this] { return now_; });
  }
  std::string Read(const std::string& key, Version* v = nullptr) {
    std::string got;
    Status st = ks_->Get(key, &got, v);
    if (st.IsNotFound()) return "<absent>";
    if (!st.ok()) return "<" + st.ToString() + ">";
    return got;
  }
  uint64_t Iterated() {
    uint64_t n = 0;
    EXPECT_TRUE(ks_->ForEach([&](const record_format::RecordView&) {
                     n++;
                     return true;
                   })
                    .ok());
    return n;
  }

  uint64_t now_ = 1'700'000'000'000ull;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
};

TEST_F(ExpiryTest, AKeyReadsAbsentFromItsExpiryOn) {
  Writer w(ks_);
  auto r = w.PutExpiring("k", "v", 1000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The keyspace's clock stamped the absolute expiry at commit.
  EXPECT_EQ(r->committed.expiry_ms, now_ + 1000);
  ASSERT_TRUE(w.Put("plain", "p").ok());
  Version v;
  EXPECT_EQ(Read("k", &v), "v");
  EXPECT_EQ(v.expiry_ms, now_ + 1000);
  EXPECT_EQ(Iterated(), 2u);
  now_ += 999;
  EXPECT_EQ(Read("k"), "v");
  now_ += 1;  // the expiry itself: absent
  EXPECT_EQ(Read("k"), "<absent>");
  EXPECT_EQ(Iterated(), 1u);
  EXPECT_EQ(Read("plain"), "p");
  // Until a sweep the slot stays and is counted (dbsize semantics).
  EXPECT_EQ(ks_->Stats().keys, 2u);
  EXPECT_TRUE(pool_->Check().ok());
}

TEST_F(ExpiryTest, APutWithoutTtlRemovesTheExpiryAndOneWithTtlSetsIt) {
  Writer w(ks_);
  ASSERT_TRUE(w.PutExpiring("k", "v1", 1000).ok());
  ASSERT_TRUE(w.Put("k", "v2").ok());
  now_ += 1'000'000;
  Version v;
  EXPECT_EQ(Read("k", &v), "v2");
  EXPECT_EQ(v.expiry_ms, 0u);
  ASSERT_TRUE(w.PutExpiring("k", "v3", 10).ok());
  now_ += 10;
  EXPECT_EQ(Read("k"), "<absent>");
}

TEST_F(ExpiryTest, ConditionsTreatAnExpiredVersionAsAbsent) {
  Writer w(ks_);
  auto first = w.PutExpiring("k", "old", 100);
  ASSERT_TRUE(first.ok());
  const uint64_t old_seq = first->committed.sequence;
  now_ += 100;
  // If-version of the expired version: the key does not exist.
  auto r = w.Put("k", "x", Condition::kIfVersion, old_seq);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsConditionFailed()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
  // Put-if-absent succeeds, and says nothing existed; the expired slot is
  // reused (one key, one slot).
  r = w.Put("k", "new", Condition::kIfAbsent);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->had_previous);
  EXPECT_EQ(Read("k"), "new");
  EXPECT_EQ(ks_->Stats().keys, 1u);
  // A delete of an expired key clears its slot and says it did not exist.
  ASSERT_TRUE(w.PutExpiring("k", "again", 5).ok());
  now_ += 5;
  auto d = w.Delete("k");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->had_previous);
  EXPECT_EQ(ks_->Stats().keys, 0u);
  EXPECT_TRUE(pool_->Check().ok());
}

TEST_F(ExpiryTest, BadTimesToLiveAreRefusedBeforeAnythingIsWritten) {
  Writer w(ks_);
  for (int64_t bad : {int64_t{0}, int64_t{-5},
                      static_cast<int64_t>(record_format::kMaxTtlMs) + 1}) {
    auto r = w.PutExpiring("k", "v", bad);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
    EXPECT_NE(r.status().message().find("time to live"), std::string::npos);
  }
  EXPECT_EQ(Read("k"), "<absent>");
  EXPECT_EQ(ks_->Stats().keys, 0u);
}

// A writer's record with a time to live out of range (a remote peer
// bypassing the client's check) is refused at commit.
TEST_F(ExpiryTest, CommitRefusesAWritersTtlOutOfRange) {
  auto g = ks_->GrantSegment();
  ASSERT_TRUE(g.ok());
  uint8_t* dst = ks_->log_base() + g->log_offset + g->start;
  const size_t n = record_format::EncodeRecord(
      dst, ks_->id(), 0, false, "k", "v", record_format::kMaxTtlMs + 1);
  CommitRequest req;
  req.segment = g->segment;
  req.grant_id = g->grant_id;
  req.offset = g->start;
  req.length = static_cast<uint32_t>(n);
  req.key_hash = index_format::HashKey("k");
  auto r = ks_->Commit(req);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("time to live"), std::string::npos);
  EXPECT_EQ(Read("k"), "<absent>");
  ASSERT_TRUE(ks_->ReturnSegment(*g).ok());
}

TEST_F(ExpiryTest, TheSweepTurnsExpiredRecordsIntoBytesTheCleanerWinsBack) {
  {
    Writer w(ks_);
    // Enough to fill several 16 KiB segments: 120 x ~320 bytes, with a
    // key that stays every 12 (each segment keeps a little live data, so
    // the cleaner has to copy it out).
    for (int i = 0; i < 120; i++) {
      const std::string k = "e" + std::to_string(i);
      ASSERT_TRUE(w.PutExpiring(k, std::string(280, 'x'), 1000 + i).ok());
      if (i % 12 == 0) {
        ASSERT_TRUE(w.Put("keep" + std::to_string(i / 12), "kept").ok());
      }
    }
  }
  const KeyspaceStats before = ks_->Stats();
  EXPECT_EQ(before.keys, 130u);
  // Nothing has expired: the sweep reclaims nothing.
  auto swept = ks_->ReclaimExpired();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 0u);
  EXPECT_EQ(ks_->Stats().live_bytes, before.live_bytes);
  now_ += 1060;  // e0 .. e60 expired
  swept = ks_->ReclaimExpired();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 61u);
  KeyspaceStats mid = ks_->Stats();
  EXPECT_EQ(mid.keys, 69u);
  EXPECT_LT(mid.live_bytes, before.live_bytes);
  EXPECT_GT(mid.dead_bytes, before.dead_bytes);
  EXPECT_EQ(Read("e61"), std::string(280, 'x'));
  now_ += 1000;  // all expired; Clean sweeps first, then compacts
  auto cleaned = ks_->Clean(0.5, 64);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status().ToString();
  EXPECT_GT(*cleaned, 0u);
  const KeyspaceStats after = ks_->Stats();
  EXPECT_EQ(after.keys, 10u);
  EXPECT_GT(after.free_segments, before.free_segments);
  EXPECT_LT(after.log_bytes_used, before.log_bytes_used);
  for (int i = 0; i < 10; i++) {
    EXPECT_EQ(Read("keep" + std::to_string(i)), "kept");
  }
  EXPECT_EQ(Read("e119"), "<absent>");
  EXPECT_EQ(Iterated(), 10u);
  EXPECT_TRUE(pool_->Check().ok());
  // A later sweep finds nothing more.
  swept = ks_->ReclaimExpired();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 0u);
}

// The sweep remembers the earliest expiry it left; a commit of an earlier
// one lowers it, so that key is swept when it expires.
TEST_F(ExpiryTest, ACommitAfterASweepIsSweptAtItsOwnExpiry) {
  Writer w(ks_);
  ASSERT_TRUE(w.PutExpiring("late", "v", 100'000).ok());
  ASSERT_EQ(ks_->ReclaimExpired().value(), 0u);  // remembers +100 s
  ASSERT_TRUE(w.PutExpiring("soon", "v", 10).ok());
  now_ += 10;
  EXPECT_EQ(ks_->ReclaimExpired().value(), 1u);
  EXPECT_EQ(Read("late"), "v");
  now_ += 100'000;
  EXPECT_EQ(ks_->ReclaimExpired().value(), 1u);
  EXPECT_EQ(ks_->Stats().keys, 0u);
}

TEST(ExpiryReopenTest, ExpiriesSurviveAReopenAndAreSweptAfterIt) {
  TempDir dir;
  const std::string path = dir.File("pool");
  uint64_t expiry = 0;
  {
    auto pool = Pool::Create(path, 4 << 20, NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->CreateKeyspace("ks", SmallKeyspace()).value();
    Writer w(ks);
    auto r = w.PutExpiring("k", "v", 60'000);
    ASSERT_TRUE(r.ok());
    expiry = r->committed.expiry_ms;
    ASSERT_TRUE(w.Put("plain", "p").ok());
  }
  auto pool = Pool::Open(path, NoGrace());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->Info().format_version, pool_format::kFormatVersion);
  auto ks = (*pool)->GetKeyspace("ks").value();
  std::string got;
  Version v;
  ASSERT_TRUE(ks->Get("k", &got, &v).ok());
  EXPECT_EQ(v.expiry_ms, expiry);  // absolute: the same after a reopen
  ks->SetClockForTesting([&] { return expiry; });
  EXPECT_TRUE(ks->Get("k", &got).IsNotFound());
  EXPECT_EQ(ks->ReclaimExpired().value(), 1u);
  EXPECT_EQ(ks->Stats().keys, 1u);
  EXPECT_TRUE(ks->Get("plain", &got).ok());
}

// Format 2 -> 4: a format 2 pool (no record carries an expiry, no
// keyspace has a commit log) opens; a read-only open leaves it at 2, a
// writable one upgrades both superblock copies in place and says so.
TEST(ExpiryFormatTest, AFormat2PoolIsUpgradedAtItsFirstWritableOpen) {
  TempDir dir;
  const std::string path = dir.File("pool");
  {
    auto pool = Pool::Create(path, 4 << 20, NoGrace());
    ASSERT_TRUE(pool.ok());
    KeyspaceOptions format2 = SmallKeyspace();
    format2.commit_log = false;
    auto ks = (*pool)->CreateKeyspace("ks", format2).value();
    Writer w(ks);
    ASSERT_TRUE(w.Put("k", "v").ok());
  }
  namespace pf = pool_format;
  // Rewrite both copies as format 2 (what the previous release wrote).
  {
    FILE* f = fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    for (uint64_t off : pf::kSuperblockOffset) {
      pf::Superblock sb;
      ASSERT_EQ(fseek(f, static_cast<long>(off), SEEK_SET), 0);
      ASSERT_EQ(fread(&sb, sizeof(sb), 1, f), 1u);
      ASSERT_EQ(sb.format_version, pf::kFormatVersion);
      sb.format_version = 2;
      sb.crc = Crc32c(&sb, offsetof(pf::Superblock, crc));
      ASSERT_EQ(fseek(f, static_cast<long>(off), SEEK_SET), 0);
      ASSERT_EQ(fwrite(&sb, sizeof(sb), 1, f), 1u);
    }
    fclose(f);
  }
  {
    PoolOptions ro = NoGrace();
    ro.read_only = true;
    auto pool = Pool::Open(path, ro);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ((*pool)->Info().format_version, 2u);
    std::string got;
    EXPECT_TRUE((*pool)->GetKeyspace("ks").value()->Get("k", &got).ok());
  }
  {
    auto pool = Pool::Open(path, NoGrace());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    const PoolInfo info = (*pool)->Info();
    EXPECT_EQ(info.format_version, 4u);
    bool noted = false;
    for (const std::string& n : info.recovery_notes) {
      noted |= n.find("upgraded from version 2 to 4") != std::string::npos;
    }
    EXPECT_TRUE(noted);
    auto ks = (*pool)->GetKeyspace("ks").value();
    std::string got;
    EXPECT_TRUE(ks->Get("k", &got).ok());
    Writer w(ks);
    EXPECT_TRUE(w.PutExpiring("t", "v", 1000).ok());
  }
  // Both copies say 4 now; the next open has nothing to upgrade.
  auto pool = Pool::Open(path, NoGrace());
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->Info().format_version, 4u);
  for (const std::string& n : (*pool)->Info().recovery_notes) {
    EXPECT_EQ(n.find("upgraded"), std::string::npos) << n;
  }
}

}  // namespace
}  // namespace kv::store
