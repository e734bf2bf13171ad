// Bad input: damaged superblocks, catalog, records and slots give clear
// errors naming what is wrong, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/pool_format.h"
#include "kv/store/writer.h"
#include "test_util.h"

namespace kv::store {
namespace {

namespace pf = pool_format;
namespace ix = index_format;
using testing::SmallKeyspace;

constexpr size_t kPoolSize = 2 << 20;

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The pool closes cleanly at the end of SetUp, so opening the image
    // does no crash repair and every damage below is the test's own.
    auto pool = Pool::CreateOn(
        std::make_unique<testing::CapturingMapping>(kPoolSize, &image_), {});
    ASSERT_TRUE(pool.ok());
    {
      auto ks = (*pool)->CreateKeyspace("ks", SmallKeyspace());
      ASSERT_TRUE(ks.ok());
      info_ = (*ks)->info();
      Writer w(*ks);
      for (int i = 0; i < 20; i++) {
        ASSERT_TRUE(
            w.Put("key" + std::to_string(i), "value" + std::to_string(i)).ok());
      }
    }
    (*pool).reset();  // clean close: image_ now holds the pool
    ASSERT_EQ(image_.size(), kPoolSize);
  }

  static Result<std::unique_ptr<Pool>> OpenImage(
      const std::vector<uint8_t>& img) {
    return Pool::OpenOn(MemoryMapping::FromImage(img, nullptr), {});
  }

  // Index of the first non-empty slot, and its value.
  size_t FirstSlot(uint64_t* value) const {
    const auto* slots =
        reinterpret_cast<const uint64_t*>(image_.data() + info_.index_offset);
    for (size_t i = 0;; i++) {
      if (slots[i] != 0) {
        *value = slots[i];
        return i;
      }
    }
  }
  void SetSlot(size_t i, uint64_t v) {
    std::memcpy(image_.data() + info_.index_offset + i * 8, &v, 8);
  }

  KeyspaceInfo info_;
  std::vector<uint8_t> image_;
};

TEST_F(CorruptionTest, IntactImageOpensClean) {
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  CheckReport r = (*pool)->Check();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.records_verified, 20u);
}

TEST_F(CorruptionTest, BadMagicInBothCopies) {
  image_[0] = image_[4096] = 'X';
  Status st = OpenImage(image_).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("bad magic"), std::string::npos) << st.ToString();
}

TEST_F(CorruptionTest, NewerFormatVersion) {
  for (uint64_t off : pf::kSuperblockOffset) {
    const uint32_t v = 7;
    std::memcpy(image_.data() + off + offsetof(pf::Superblock, format_version),
                &v, 4);
  }
  Status st = OpenImage(image_).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("format version 7 is newer"), std::string::npos)
      << st.ToString();
}

// Format 1 (before online index growth) has no index header page: refused
// with what to do.
TEST_F(CorruptionTest, FormatVersionOneIsRefusedWithTheWayOut) {
  for (uint64_t off : pf::kSuperblockOffset) {
    const uint32_t v = 1;
    std::memcpy(image_.data() + off + offsetof(pf::Superblock, format_version),
                &v, 4);
  }
  Status st = OpenImage(image_).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("format version 1 (rpkv before online index "
                              "growth) is not supported"),
            std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("kvadmin dump"), std::string::npos);
}

TEST_F(CorruptionTest, DamagedSuperblockCopyFallsBackAndIsRepaired) {
  image_[100] ^= 0xff;  // inside copy A's checksummed bytes
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  PoolInfo info = (*pool)->Info();
  ASSERT_EQ(info.recovery_notes.size(), 1u);
  EXPECT_NE(info.recovery_notes[0].find("copy A was damaged"),
            std::string::npos);
  EXPECT_TRUE((*pool)->Check().ok());  // rewritten from copy B
  EXPECT_EQ((*pool)->ListKeyspaces().size(), 1u);
}

TEST_F(CorruptionTest, BothSuperblockCopiesDamaged) {
  image_[100] ^= 0xff;
  image_[4096 + 100] ^= 0xff;
  Status st = OpenImage(image_).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos)
      << st.ToString();
}

TEST_F(CorruptionTest, TruncatedImage) {
  std::vector<uint8_t> small(image_.begin(), image_.begin() + 1000);
  Status st = OpenImage(small).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("too small"), std::string::npos);
  std::vector<uint8_t> cut(image_.begin(), image_.begin() + (1 << 20));
  st = OpenImage(cut).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.ToString();
}

TEST_F(CorruptionTest, TruncatedFile) {
  testing::TempDir dir;
  const std::string path = dir.File("p");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(image_.data()), 1 << 20);
  }
  Status st = Pool::Open(path).status();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  std::ofstream(dir.File("empty")).close();
  st = Pool::Open(dir.File("empty")).status();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
}

TEST_F(CorruptionTest, CatalogEntryWithBadGeometry) {
  // Re-seal a copy of the current entry with a log past the pool end.
  pf::CatalogEntry e;
  int cur = -1;
  for (int c = 0; c < 2; c++) {
    pf::CatalogEntry x;
    std::memcpy(&x, image_.data() + pf::CatalogCopyOffset(0, c), sizeof(x));
    if (x.magic == pf::kCatalogMagic &&
        (cur < 0 || x.generation > e.generation)) {
      e = x;
      cur = c;
    }
  }
  ASSERT_GE(cur, 0);
  e.log_size = 64ull << 30;
  e.generation++;
  e.crc = Crc32c(reinterpret_cast<uint8_t*>(&e) + 4, sizeof(e) - 4);
  std::memcpy(image_.data() + pf::CatalogCopyOffset(0, 1 - cur), &e, sizeof(e));
  Status st = OpenImage(image_).status();
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("keyspace 'ks'"), std::string::npos)
      << st.ToString();
}

TEST_F(CorruptionTest, TornCatalogCopyFallsBackToPrevious) {
  // Simulate an update of slot 0 (generation + 1 into the other copy) that
  // was torn: the previous copy must stay current.
  pf::CatalogEntry a;
  std::memcpy(&a, image_.data() + pf::CatalogCopyOffset(0, 0), sizeof(a));
  ASSERT_EQ(a.magic, pf::kCatalogMagic);
  pf::CatalogEntry b = a;
  b.generation = a.generation + 1;
  b.state = static_cast<uint32_t>(pf::KeyspaceState::kDropped);
  b.crc = Crc32c(reinterpret_cast<uint8_t*>(&b) + 4, sizeof(b) - 4);
  std::memcpy(image_.data() + pf::CatalogCopyOffset(0, 1), &b, sizeof(b));
  {
    auto pool = OpenImage(image_);  // the intact newer copy wins: dropped
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ((*pool)->ListKeyspaces().size(), 0u);
  }
  image_[pf::CatalogCopyOffset(0, 1) + 200] ^= 1;  // torn
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->ListKeyspaces().size(), 1u);
  EXPECT_TRUE((*pool)->Check().ok());
}

TEST_F(CorruptionTest, RecordWithBadCrc) {
  uint64_t v;
  FirstSlot(&v);
  const uint64_t off = uint64_t{ix::UnpackSlot(v).offset_units} * 64;
  image_[info_.log_offset + off + 34] ^= 0x40;  // a key byte
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  CheckReport r = (*pool)->Check();
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("CRC32C mismatch"), std::string::npos)
      << r.problems[0];
  // Every key is either readable or reported as corruption, never wrong.
  auto ks = (*pool)->GetKeyspace("ks").value();
  int corrupt = 0;
  for (int i = 0; i < 20; i++) {
    std::string got;
    Status st = ks->Get("key" + std::to_string(i), &got);
    if (st.ok()) {
      EXPECT_EQ(got, "value" + std::to_string(i));
    } else {
      EXPECT_TRUE(st.IsCorruption()) << st.ToString();
      corrupt++;
    }
  }
  EXPECT_EQ(corrupt, 1);
}

TEST_F(CorruptionTest, SlotPointingOutsideTheLog) {
  uint64_t v;
  const size_t i = FirstSlot(&v);
  ix::SlotFields f = ix::UnpackSlot(v);
  f.offset_units = static_cast<uint32_t>(info_.log_size / 64);  // past the end
  SetSlot(i, ix::PackSlot(f));
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  CheckReport r = (*pool)->Check();
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("points outside the log"), std::string::npos)
      << r.problems[0];
  auto ks = (*pool)->GetKeyspace("ks").value();
  EXPECT_FALSE(
      ks->ForEach([](const record_format::RecordView&) { return true; }).ok());
}

TEST_F(CorruptionTest, SlotWithWrongFingerprint) {
  uint64_t v;
  const size_t i = FirstSlot(&v);
  ix::SlotFields f = ix::UnpackSlot(v);
  f.fingerprint ^= 0x100;
  SetSlot(i, ix::PackSlot(f));
  auto pool = OpenImage(image_);
  ASSERT_TRUE(pool.ok());
  CheckReport r = (*pool)->Check();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.problems[0].find("fingerprint"), std::string::npos)
      << r.problems[0];
}

}  // namespace
}  // namespace kv::store
