// Recovery after an unclean shutdown: what the one-persist commit may leave
// (torn records, duplicate slots) is repaired by a writable open, reported
// as notes by a read-only one; and the commit rules that make it sound
// (sequence order, zeroed grants).
#include <gtest/gtest.h>

#include <cstring>

#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace ix = index_format;
namespace rf = record_format;
using testing::NoGrace;
using testing::SmallKeyspace;

constexpr size_t kPoolSize = 4 << 20;

class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto mapping = MemoryMapping::Zeroed(kPoolSize, nullptr);
    base_ = mapping->base();
    auto pool = Pool::CreateOn(std::move(mapping), NoGrace());
    ASSERT_TRUE(pool.ok());
    pool_ = std::move(*pool);
    ks_ = pool_->CreateKeyspace("ks", SmallKeyspace()).value();
    info_ = ks_->info();
  }

  // The pool as a crash would leave it now (open: not closed cleanly).
  std::vector<uint8_t> Image() const {
    return std::vector<uint8_t>(base_, base_ + kPoolSize);
  }
  static Result<std::unique_ptr<Pool>> Open(const std::vector<uint8_t>& img,
                                            bool read_only) {
    PoolOptions o = NoGrace();
    o.read_only = read_only;
    return Pool::OpenOn(MemoryMapping::FromImage(img, nullptr), o);
  }
  // Stores `slot` in the first empty slot of key's buckets in `img`.
  void AddSlot(std::vector<uint8_t>* img, std::string_view key,
               uint64_t slot) const {
    const uint64_t home = ix::HomeBucket(ix::HashKey(key), info_.bucket_count);
    // The index starts the keyspace region.
    auto* slots =
        reinterpret_cast<uint64_t*>(img->data() + info_.index_offset) +
        home * ix::kSlotsPerBucket;
    for (size_t i = 0; i < ix::kProbeBuckets * ix::kSlotsPerBucket; i++) {
      if (slots[i] == 0) {
        slots[i] = slot;
        return;
      }
    }
    FAIL() << "no empty slot";
  }
  static uint64_t SlotFor(std::string_view key, uint64_t log_offset,
                          uint64_t length) {
    return ix::PackSlot({ix::Fingerprint(ix::HashKey(key)),
                         static_cast<uint16_t>(length / ix::kUnit),
                         static_cast<uint32_t>(log_offset / ix::kUnit)});
  }

  uint8_t* base_ = nullptr;
  std::unique_ptr<Pool> pool_;
  std::shared_ptr<Keyspace> ks_;
  KeyspaceInfo info_;
};

TEST_F(RecoveryTest, DuplicateSlotsKeepTheHigherSequence) {
  Writer w(ks_);
  Version v1;
  ASSERT_TRUE(w.Put("key", "one").ok());
  std::string got;
  ASSERT_TRUE(ks_->Get("key", &got, &v1).ok());
  ASSERT_TRUE(w.Put("key", "two").ok());
  // The old slot's clear never reached media.
  std::vector<uint8_t> img = Image();
  AddSlot(&img, "key", SlotFor("key", v1.log_offset, v1.length));
  {
    auto ro = Open(img, true);
    ASSERT_TRUE(ro.ok()) << ro.status().ToString();
    auto ks = (*ro)->GetKeyspace("ks").value();
    ASSERT_TRUE(ks->Get("key", &got).ok());
    EXPECT_EQ(got, "two");  // the newest version wins, even unrepaired
    CheckReport r = (*ro)->Check();
    EXPECT_TRUE(r.ok()) << r.problems[0];
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("next writable open"), std::string::npos);
  }
  auto rw = Open(img, false);
  ASSERT_TRUE(rw.ok());
  const auto notes = (*rw)->Info().recovery_notes;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("an older version of the key"), std::string::npos)
      << notes[0];
  CheckReport r = (*rw)->Check();
  EXPECT_TRUE(r.ok() && r.notes.empty());
  auto ks = (*rw)->GetKeyspace("ks").value();
  ASSERT_TRUE(ks->Get("key", &got).ok());
  EXPECT_EQ(got, "two");
  EXPECT_EQ(ks->Stats().keys, 1u);
}

TEST_F(RecoveryTest, SlotOfATornRecordIsCleared) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("kept", "value").ok());
  Version v;
  std::string got;
  ASSERT_TRUE(ks_->Get("kept", &got, &v).ok());
  // A slot for "torn" whose record never reached media: the bytes after
  // the last record are the zeros the segment was granted with.
  std::vector<uint8_t> img = Image();
  AddSlot(&img, "torn", SlotFor("torn", v.log_offset + v.length, 128));
  {
    auto ro = Open(img, true);
    ASSERT_TRUE(ro.ok());
    CheckReport r = (*ro)->Check();
    EXPECT_TRUE(r.ok()) << r.problems[0];
    EXPECT_EQ(r.notes.size(), 1u);
  }
  auto rw = Open(img, false);
  ASSERT_TRUE(rw.ok());
  ASSERT_EQ((*rw)->Info().recovery_notes.size(), 1u);
  EXPECT_NE((*rw)->Info().recovery_notes[0].find("a commit the crash"),
            std::string::npos);
  EXPECT_TRUE((*rw)->Check().ok());
  auto ks = (*rw)->GetKeyspace("ks").value();
  EXPECT_TRUE(ks->Get("torn", &got).IsNotFound());
  ASSERT_TRUE(ks->Get("kept", &got).ok());
  EXPECT_EQ(got, "value");
}

TEST_F(RecoveryTest, CleanCloseNeedsNoRepairAndDamageStaysAProblem) {
  std::vector<uint8_t> img;
  {
    auto pool = Pool::CreateOn(
        std::make_unique<testing::CapturingMapping>(kPoolSize, &img),
        NoGrace());
    ASSERT_TRUE(pool.ok());
    auto ks = (*pool)->CreateKeyspace("ks", SmallKeyspace()).value();
    Writer w(ks);
    ASSERT_TRUE(w.Put("a", "1").ok());
    ASSERT_TRUE(w.Put("a", "2").ok());  // leaves an unpersisted clear
  }
  {
    auto pool = Open(img, false);
    ASSERT_TRUE(pool.ok());
    EXPECT_TRUE((*pool)->Info().recovery_notes.empty());
    EXPECT_TRUE((*pool)->Check().ok());
  }
  // On a cleanly closed pool a bad slot is damage, not a crash leftover.
  const uint64_t zero_area = info_.log_size - 128;
  AddSlot(&img, "b", SlotFor("b", zero_area, 128));
  auto pool = Open(img, false);
  ASSERT_TRUE(pool.ok());
  EXPECT_TRUE((*pool)->Info().recovery_notes.empty());
  EXPECT_FALSE((*pool)->Check().ok());
}

// Check() is its own verifier (it does not share recovery's duplicate
// search): on a cleanly closed pool, a key held by a slot of its home
// bucket and one of the next bucket is a problem.
TEST_F(RecoveryTest, CheckFindsADuplicateInTheNextBucket) {
  const std::vector<std::string> keys =
      testing::KeysWithHome(7, 8, info_.bucket_count);
  std::vector<uint8_t> img;
  Version v1;
  {
    auto pool = Pool::CreateOn(
        std::make_unique<testing::CapturingMapping>(kPoolSize, &img),
        NoGrace());
    ASSERT_TRUE(pool.ok());
    auto ks = (*pool)->CreateKeyspace("ks", SmallKeyspace()).value();
    Writer w(ks);
    for (const auto& k : keys) ASSERT_TRUE(w.Put(k, "v1").ok());
    std::string got;
    ASSERT_TRUE(ks->Get(keys.back(), &got, &v1).ok());
    ASSERT_TRUE(w.Put(keys.back(), "v2").ok());  // into bucket 8
  }
  {
    auto pool = Open(img, false);
    ASSERT_TRUE(pool.ok());
    EXPECT_TRUE((*pool)->Check().ok());
  }
  // The old version's slot back in bucket 7, where it was.
  AddSlot(&img, keys.back(), SlotFor(keys.back(), v1.log_offset, v1.length));
  auto pool = Open(img, true);
  ASSERT_TRUE(pool.ok());
  CheckReport r = (*pool)->Check();
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("holds a key that slot 8."), std::string::npos)
      << r.problems[0];
}

// Sequences are the keyspace's: a writer that picks its own (here the
// largest, which would pin the key: every later version would look older)
// is refused, and nothing changes.
TEST_F(RecoveryTest, AWriterChosenSequenceIsRefused) {
  Writer w(ks_);
  ASSERT_TRUE(w.Put("key", "before").ok());
  SegmentGrant g = ks_->GrantSegment().value();
  const size_t n =
      rf::EncodeRecord(ks_->log_base() + g.log_offset + g.start, ks_->id(),
                       ~uint64_t{0}, false, "key", "pinned");
  CommitRequest r{g.segment, g.grant_id, g.start, static_cast<uint32_t>(n),
                  ix::HashKey("key")};
  auto pinned = ks_->Commit(r);
  EXPECT_TRUE(pinned.status().IsInvalidArgument())
      << pinned.status().ToString();
  std::string got;
  ASSERT_TRUE(ks_->Get("key", &got).ok());
  EXPECT_EQ(got, "before");
  // Later puts of the key apply, in commit order.
  auto later = w.Put("key", "after");
  ASSERT_TRUE(later.ok());
  ASSERT_TRUE(ks_->Get("key", &got).ok());
  EXPECT_EQ(got, "after");
}

// Commit order decides: two writers encode the same key; whichever commits
// last is the key's version, with the higher (assigned) sequence.
TEST_F(RecoveryTest, CommitOrderIsSequenceOrder) {
  SegmentGrant g1 = ks_->GrantSegment().value();
  SegmentGrant g2 = ks_->GrantSegment().value();
  auto write = [&](SegmentGrant* g, std::string_view value) {
    const size_t n =
        rf::EncodeRecord(ks_->log_base() + g->log_offset + g->start, ks_->id(),
                         0, false, "key", value);
    CommitRequest r{g->segment, g->grant_id, g->start, static_cast<uint32_t>(n),
                    ix::HashKey("key")};
    g->start += n;
    return r;
  };
  const CommitRequest first_written = write(&g1, "written first");
  const CommitRequest second_written = write(&g2, "written second");
  auto a = ks_->Commit(second_written);
  ASSERT_TRUE(a.ok());
  auto b = ks_->Commit(first_written);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_GT(b->committed.sequence, a->committed.sequence);
  EXPECT_TRUE(b->had_previous);
  std::string got;
  Version v;
  ASSERT_TRUE(ks_->Get("key", &got, &v).ok());
  EXPECT_EQ(got, "written first");
  EXPECT_EQ(v.sequence, b->committed.sequence);
}

TEST_F(RecoveryTest, ARegrantedSegmentIsZeroFromItsTail) {
  SegmentGrant g = ks_->GrantSegment().value();
  uint8_t* seg = ks_->log_base() + g.log_offset;
  const size_t n = rf::EncodeRecord(seg, ks_->id(), 0, false, "k", "v");
  ASSERT_TRUE(ks_->Commit({g.segment, g.grant_id, 0, static_cast<uint32_t>(n),
                           ix::HashKey("k")})
                  .ok());
  // An uncommitted record past the tail (a writer that died mid-put).
  rf::EncodeRecord(seg + n, ks_->id(), 0, false, "k", "x");
  ASSERT_TRUE(ks_->ReturnSegment(g).ok());
  SegmentGrant again = ks_->GrantSegment().value();
  ASSERT_EQ(again.segment, g.segment);
  ASSERT_EQ(again.start, n);
  for (uint64_t i = again.start; i < again.size; i++) {
    ASSERT_EQ(seg[i], 0) << "byte " << i;
  }
  std::string got;
  ASSERT_TRUE(ks_->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
}

// An open that hands out 2^40 sequences crosses into the next epoch's
// range; that epoch is persisted first, so the next open (clean or not)
// still starts above everything, and updates after it are not superseded.
TEST(SequenceEpochTest, CrossingAnEpochPersistsItBeforeUse) {
  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "clean close" : "crash");
    std::vector<uint8_t> img;
    uint64_t last = 0;
    {
      auto mapping = MemoryMapping::Zeroed(kPoolSize, nullptr);
      const uint8_t* base = mapping->base();
      auto pool = Pool::CreateOn(
          clean ? std::unique_ptr<Mapping>(
                      std::make_unique<testing::CapturingMapping>(kPoolSize,
                                                                  &img))
                : std::move(mapping),
          NoGrace());
      ASSERT_TRUE(pool.ok());
      if (clean) base = nullptr;
      auto ks = (*pool)->CreateKeyspace("ks", SmallKeyspace()).value();
      // Epoch 1 is nearly used up: the next puts cross into epoch 2.
      ks->SetNextSequenceForTesting((2ull << Keyspace::kEpochShift) - 2);
      Writer w(ks);
      for (int i = 0; i < 4; i++) {
        auto r = w.Put("key", "v" + std::to_string(i));
        ASSERT_TRUE(r.ok());
        last = r->committed.sequence;
      }
      EXPECT_EQ(last >> Keyspace::kEpochShift, 2u);
      if (!clean) img.assign(base, base + kPoolSize);
    }
    auto pool = Pool::OpenOn(MemoryMapping::FromImage(img, nullptr), NoGrace());
    ASSERT_TRUE(pool.ok());
    auto ks = (*pool)->GetKeyspace("ks").value();
    Writer w(ks);
    auto r = w.Put("key", "after reopen");
    ASSERT_TRUE(r.ok());
    EXPECT_GT(r->committed.sequence, last);
    std::string got;
    ASSERT_TRUE(ks->Get("key", &got).ok());
    EXPECT_EQ(got, "after reopen");
  }
}

}  // namespace
}  // namespace kv::store
