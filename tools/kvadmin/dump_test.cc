// kvadmin dump / load: a backup of keys and values that comes back whole
// into a fresh pool (binary keys and values included), refuses a corrupted
// file naming the frame's offset (loading nothing), and never merges into
// a keyspace that holds keys.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dump_commands.h"
#include "dump_format.h"
#include "kv/crc32c.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "kvadmin_test_util.h"

namespace kv::kvadmin {
namespace {

using testing::Kvadmin;
using testing::Outcome;
using testing::ReadFile;
using DumpTest = testing::KvadminDirTest;

std::map<std::string, std::string> Contents(const std::string& pool,
                                            const std::string& keyspace) {
  std::map<std::string, std::string> m;
  store::PoolOptions o;
  o.read_only = true;
  auto p = store::Pool::Open(pool, o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  if (!p.ok()) return m;
  auto ks = (*p)->GetKeyspace(keyspace);
  EXPECT_TRUE(ks.ok()) << keyspace;
  if (!ks.ok()) return m;
  EXPECT_TRUE((*ks)
                  ->ForEach([&](const record_format::RecordView& v) {
                    m[std::string(v.key)] = std::string(v.value);
                    return true;
                  })
                  .ok());
  return m;
}

class DumpLoadTest : public DumpTest {
 protected:
  void SetUp() override {
    DumpTest::SetUp();
    ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, 0);
    ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                      " --keyspace=a --segment_size=1M --index_capacity=4096"
                      " --max_value_size=64K")
                  .code,
              0);
    auto p = store::Pool::Open(pool_);
    ASSERT_TRUE(p.ok());
    auto ks = (*p)->GetKeyspace("a");
    ASSERT_TRUE(ks.ok());
    store::Writer w(*ks);
    for (int i = 0; i < 500; i++) {
      std::string k = "key" + std::to_string(i), v(i % 300, 'v');
      if (i % 7 == 0) k += std::string("\0\xff\n", 3);  // binary-safe
      if (i % 5 == 0) v = std::string("\0\x01 value\n", 9) + v;
      ASSERT_TRUE(w.Put(k, v).ok());
      want_[k] = v;
    }
    ASSERT_TRUE(w.Put("gone", "x").ok());
    ASSERT_TRUE(w.Delete("gone").ok());
  }
  std::map<std::string, std::string> want_;
};

TEST_F(DumpLoadTest, ABackupComesBackWholeIntoAFreshPool) {
  const std::string file = dir_ + "/a.dump";
  Outcome r = Kvadmin("dump --pool=" + pool_ + " --out=" + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("dumped 1 keyspaces, 500 keys"), std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
  // A second dump to the same file is refused.
  EXPECT_EQ(Kvadmin("dump --pool=" + pool_ + " --out=" + file).code, 1);

  const std::string fresh = dir_ + "/fresh";
  ASSERT_EQ(Kvadmin("create --pool=" + fresh + " --size=64M").code, 0);
  r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loaded 1 keyspaces, 500 keys"), std::string::npos);
  EXPECT_EQ(Contents(fresh, "a"), want_);
  // Loading again would merge: refused, nothing loaded.
  r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("keyspace 'a' already holds 500 keys; load into a "
                       "fresh pool or keyspace"),
            std::string::npos)
      << r.out;
  // Into another, fresh keyspace of the same pool.
  r = Kvadmin("load --pool=" + fresh + " --in=" + file + " --keyspace=b");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Contents(fresh, "b"), want_);
}

TEST_F(DumpLoadTest, ACorruptedDumpIsRefusedNamingTheOffset) {
  const std::string file = dir_ + "/a.dump";
  ASSERT_EQ(Kvadmin("dump --pool=" + pool_ + " --out=" + file).code, 0);
  const std::string good = ReadFile(file);
  const std::string fresh = dir_ + "/fresh";
  ASSERT_EQ(Kvadmin("create --pool=" + fresh + " --size=64M").code, 0);

  // Find the frame that holds byte `at`, walking the frames.
  auto frame_at = [&](size_t at) {
    size_t off = dump::kHeaderBytes;
    while (true) {
      uint32_t len = 0;
      std::memcpy(&len, good.data() + off + 1, 4);
      const size_t next = off + 5 + len + 4;
      if (at < next) return off;
      off = next;
    }
  };
  const size_t flip = good.size() / 2;
  std::string bad = good;
  bad[flip] ^= 0x40;
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << bad;
  }
  Outcome r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("corruption: dump " + file + ": frame at offset " +
                       std::to_string(frame_at(flip)) +
                       ": checksum mismatch; nothing was loaded"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Kvadmin("keyspace list --pool=" + fresh).out.find("a\tid="),
            std::string::npos);  // nothing created

  // Cut short: no end frame.
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << good.substr(0, good.size() - 30);
  }
  r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;
  // Not a dump at all.
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << "hello, this is no dump file";
  }
  r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("header: bad magic (not a kvadmin dump)"),
            std::string::npos)
      << r.out;
}

// Expiring keys (dump version 2, 'X' frames): an expiry is kept as the
// absolute time it is; a key expired at the dump is not in it, one that
// expires between dump and load is not loaded.
TEST_F(DumpLoadTest, ExpiriesAreKeptAbsoluteAndExpiredKeysStayOut) {
  uint64_t minute_expiry = 0;
  {
    auto p = store::Pool::Open(pool_);
    ASSERT_TRUE(p.ok());
    auto ks = (*p)->GetKeyspace("a").value();
    store::Writer w(ks);
    auto r = w.PutExpiring("minute", "m", 60'000);
    ASSERT_TRUE(r.ok());
    minute_expiry = r->committed.expiry_ms;
    ASSERT_TRUE(w.PutExpiring("soon", "s", 300).ok());
    ASSERT_TRUE(w.PutExpiring("expired", "e", 1).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::string file = dir_ + "/a.dump";
  Outcome r = Kvadmin("dump --pool=" + pool_ + " --out=" + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("dumped 1 keyspaces, 502 keys"), std::string::npos)
      << r.out;  // 500 + minute + soon
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // soon: gone
  const std::string fresh = dir_ + "/fresh";
  ASSERT_EQ(Kvadmin("create --pool=" + fresh + " --size=64M").code, 0);
  r = Kvadmin("load --pool=" + fresh + " --in=" + file);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("loaded 1 keyspaces, 501 keys"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(1 expired since the dump: skipped)"),
            std::string::npos)
      << r.out;
  auto want = want_;
  want["minute"] = "m";
  EXPECT_EQ(Contents(fresh, "a"), want);
  store::PoolOptions o;
  o.read_only = true;
  auto p = store::Pool::Open(fresh, o);
  ASSERT_TRUE(p.ok());
  std::string got;
  store::Version v;
  ASSERT_TRUE((*p)->GetKeyspace("a").value()->Get("minute", &got, &v).ok());
  // Re-stamped from what was left: the same instant within the load's ms.
  EXPECT_GE(v.expiry_ms, minute_expiry);
  EXPECT_LE(v.expiry_ms, minute_expiry + 50);
}

// A dump file of the keyspaces `frames`, each with one record.
std::string DumpOf(const std::vector<dump::KeyspaceFrame>& frames) {
  std::ostringstream out;
  dump::DumpWriter w(&out);
  for (const dump::KeyspaceFrame& k : frames) {
    w.Keyspace(k);
    w.Record("k", "v");
  }
  w.End();
  return out.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// A dump's frames pass their checksums yet may still lie: a bucket count
// that is no power of two or above 2^32 (the index's limit; times four it
// would wrap as an index capacity), or one keyspace twice (a load would
// merge them). Refused before the pool changes, naming the frame.
TEST_F(DumpTest, AKeyspaceFrameThatLiesIsRefusedBeforeThePoolChanges) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, 0);
  const std::string file = dir_ + "/lies.dump";
  const dump::KeyspaceFrame good{"a", 16, 1 << 20, 65536, 1024};
  for (uint64_t buckets : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 33),
                           (uint64_t{1} << 62) + 1, ~uint64_t{0}}) {
    dump::KeyspaceFrame bad = good;
    bad.name = "b";
    bad.bucket_count = buckets;
    const std::string bytes = DumpOf({good, bad});
    WriteFile(file, bytes);
    Outcome r = Kvadmin("load --pool=" + pool_ + " --in=" + file);
    EXPECT_EQ(r.code, 1) << r.out;
    // The second keyspace frame starts after the header, the first
    // keyspace frame (5 + 24 + 1 + 4 bytes) and its record (5 + 4 + 1 + 1
    // + 4).
    EXPECT_NE(r.out.find("corruption: dump " + file + ": frame at offset " +
                         std::to_string(dump::kHeaderBytes + 34 + 15) +
                         ": bucket count " + std::to_string(buckets) +
                         " is not a power of two of at most 2^32; nothing "
                         "was loaded"),
              std::string::npos)
        << r.out;
  }
  WriteFile(file, DumpOf({good, good}));
  Outcome r = Kvadmin("load --pool=" + pool_ + " --in=" + file);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("keyspace 'a' appears twice; nothing was loaded"),
            std::string::npos)
      << r.out;
  // Nothing was created by any of them; the good frame alone loads.
  EXPECT_EQ(Kvadmin("keyspace list --pool=" + pool_).out.find("a\tid="),
            std::string::npos);
  WriteFile(file, DumpOf({good}));
  r = Kvadmin("load --pool=" + pool_ + " --in=" + file);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Contents(pool_, "a"),
            (std::map<std::string, std::string>{{"k", "v"}}));
}

// load reads its file twice (checked whole first, then loaded). A file
// that is another one at the second read — more keyspaces, or other ones,
// than were checked — stops the load at the first keyspace it did not
// check, instead of reading past what it checked.
TEST_F(DumpTest, ADumpThatChangesBetweenTheCheckAndTheLoadIsNotLoadedOn) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, 0);
  const dump::KeyspaceFrame a{"a", 16, 1 << 20, 65536, 1024};
  const dump::KeyspaceFrame b{"b", 16, 1 << 20, 65536, 1024};
  const dump::KeyspaceFrame c{"c", 16, 1 << 20, 65536, 1024};
  struct Case {
    std::vector<dump::KeyspaceFrame> first, second;
    uint64_t loaded_before;
  };
  for (const Case& t : {Case{{a}, {a, b}, 1}, Case{{b}, {c}, 0}}) {
    std::vector<std::string> passes = {DumpOf(t.first), DumpOf(t.second)};
    size_t opened = 0;
    std::ostringstream out, err;
    const int code = LoadFrom(
        pool_, "changing.dump",
        [&]() -> Result<std::unique_ptr<std::istream>> {
          return std::unique_ptr<std::istream>(
              new std::istringstream(passes.at(opened++)));
        },
        "", out, err);
    EXPECT_EQ(code, 1) << err.str();
    EXPECT_EQ(opened, 2u);
    EXPECT_NE(err.str().find("corruption: dump changing.dump: the file "
                             "changed while it was loaded (its keyspaces "
                             "are not the ones checked) (" +
                             std::to_string(t.loaded_before) +
                             " keys were loaded before)"),
              std::string::npos)
        << err.str();
  }
  // Neither keyspace that was not checked was created.
  const std::string list = Kvadmin("keyspace list --pool=" + pool_).out;
  EXPECT_NE(list.find("a\tid="), std::string::npos) << list;
  EXPECT_EQ(list.find("c\tid="), std::string::npos) << list;
}

// A pipe cannot be read twice: refused up front, saying what to do.
TEST_F(DumpTest, ADumpFromAPipeIsRefusedBeforeItIsRead) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, 0);
  const std::string fifo = dir_ + "/pipe.dump";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Outcome r = Kvadmin("load --pool=" + pool_ + " --in=" + fifo);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("invalid_argument: " + fifo +
                       " is not a regular file: load reads its dump twice "
                       "(checked whole before the pool changes); save the "
                       "dump to a file first"),
            std::string::npos)
      << r.out;
}

// Version 1 files (no 'X' frame) are still read; an 'X' frame in one is
// refused as an unknown frame type.
TEST(DumpFormatTest, VersionOneIsReadAndKnowsNoExpiryFrame) {
  std::ostringstream out;
  {
    dump::DumpWriter w(&out);
    w.Keyspace({"a", 16, 1 << 20, 65536, 1024});
    w.Record("k", "v");
    w.Record("t", "v", 1'700'000'000'000ull);
    w.End();
  }
  std::string bytes = out.str();
  auto read_all = [](const std::string& b, uint64_t* expiry_seen) {
    std::istringstream in(b);
    dump::DumpReader r(&in, "mem");
    Status st = r.ReadHeader();
    dump::DumpReader::Kind kind{};
    dump::KeyspaceFrame k;
    std::string key, value;
    while (st.ok()) {
      uint64_t e = 0;
      st = r.Next(&kind, &k, &key, &value, &e);
      if (st.ok() && kind == dump::DumpReader::Kind::kRecord && e != 0) {
        *expiry_seen = e;
      }
      if (!st.ok() || kind == dump::DumpReader::Kind::kEnd) break;
    }
    return st;
  };
  uint64_t seen = 0;
  ASSERT_TRUE(read_all(bytes, &seen).ok());
  EXPECT_EQ(seen, 1'700'000'000'000ull);
  // The same frames under a version 1 header: 'X' is unknown there.
  std::string v1 = bytes;
  v1[8] = 1;
  const uint32_t crc = Crc32c(v1.data(), 12);
  std::memcpy(v1.data() + 12, &crc, 4);
  Status st = read_all(v1, &seen);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("unknown frame type 88"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace kv::kvadmin
