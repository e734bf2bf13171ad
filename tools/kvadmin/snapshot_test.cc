// kvadmin snapshot, snapshot-info, verify and restore end to end: the real
// binary on real pool files, and the snapshot read back through RocksDB.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "kv/index_format.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "kvadmin_test_util.h"
#include "snapshot_db.h"
#include "snapshot_entries.h"

namespace kv::kvadmin {
namespace {

using testing::CountLines;
using testing::Kvadmin;
using testing::Outcome;
using testing::ReadFile;

std::string Key(int i) { return "key" + std::to_string(i); }
std::string Value(int i, int round = 0) {
  return "value-" + std::to_string(i) + "-" + std::to_string(round);
}

store::KeyspaceOptions Small() {
  store::KeyspaceOptions o;
  o.index_capacity = 2048;
  o.segment_size = 64 << 10;
  o.log_size = 2 << 20;
  o.max_value_size = 4096;
  return o;
}

class SnapshotTest : public testing::KvadminDirTest {
 protected:
  // A pool with keyspace "a" holding keys 0..n-1 (and any in `deleted`
  // deleted again); `model_` is what it holds.
  void MakePool(int n, const std::set<int>& deleted = {}) {
    auto pool = store::Pool::Create(pool_, 16 << 20);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->CreateKeyspace("a", Small());
    ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    store::Writer w(*ks);
    for (int i = 0; i < n; i++) {
      ASSERT_TRUE(w.Put(Key(i), Value(i)).ok());
      model_["a"][Key(i)] = Value(i);
    }
    for (int i : deleted) {
      ASSERT_TRUE(w.Delete(Key(i)).ok());
      model_["a"].erase(Key(i));
    }
  }

  // Every key of the model reads its value and nothing else is there.
  void ExpectPoolHoldsModel() {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    for (const auto& [name, keys] : model_) {
      auto ks = (*pool)->GetKeyspace(name);
      ASSERT_TRUE(ks.ok()) << name;
      EXPECT_EQ((*ks)->Stats().keys, keys.size()) << name;
      for (const auto& [k, v] : keys) {
        std::string got;
        Status st = (*ks)->Get(k, &got);
        ASSERT_TRUE(st.ok()) << name << "/" << k << ": " << st.ToString();
        EXPECT_EQ(got, v) << name << "/" << k;
      }
    }
  }

  store::KeyspaceInfo Info(const std::string& name) {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    EXPECT_TRUE(pool.ok());
    for (const auto& k : (*pool)->ListKeyspaces()) {
      if (k.name == name) return k;
    }
    ADD_FAILURE() << "no keyspace " << name;
    return {};
  }

  void Patch(uint64_t offset, const std::string& bytes) {
    std::fstream f(pool_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  Outcome Snap(const std::string& out) {
    return Kvadmin("snapshot --pool=" + pool_ + " --out=" + out);
  }

  std::map<std::string, std::map<std::string, std::string>> model_;
};

TEST_F(SnapshotTest, EmptyPool) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=32M").code, 0);
  const std::string before = ReadFile(pool_);
  Outcome r = Snap(dir_ + "/snap");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 keyspaces, 0 entries"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(pool_), before);  // a snapshot never writes the pool
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/snap.partial-" +
                                       std::to_string(getpid())));
  r = Kvadmin("snapshot-info --snapshot=" + dir_ + "/snap --format=json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"entries\":0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"keyspaces\":[]"), std::string::npos) << r.out;
  r = Kvadmin("verify --pool=" + pool_ + " --snapshot=" + dir_ + "/snap");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("identical"), std::string::npos) << r.out;
}

TEST_F(SnapshotTest, SeveralKeyspacesWithTombstones) {
  {
    auto pool = store::Pool::Create(pool_, 16 << 20);
    ASSERT_TRUE(pool.ok());
    for (const char* name : {"a", "b", "c"}) {
      auto ks = (*pool)->CreateKeyspace(name, Small());
      ASSERT_TRUE(ks.ok()) << ks.status().ToString();
    }
    store::Writer a((*pool)->GetKeyspace("a").value());
    store::Writer b((*pool)->GetKeyspace("b").value());
    for (int i = 0; i < 200; i++) ASSERT_TRUE(a.Put(Key(i), Value(i)).ok());
    for (int i = 0; i < 200; i += 4) ASSERT_TRUE(a.Delete(Key(i)).ok());
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i < 100; i++) {
        ASSERT_TRUE(b.Put(Key(i), Value(i, round)).ok());
      }
    }
  }
  Outcome r = Snap(dir_ + "/snap");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 keyspaces, 250 entries"), std::string::npos) << r.out;
  r = Kvadmin("snapshot-info --snapshot=" + dir_ + "/snap --format=json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("{\"name\":\"a\",\"id\":1,\"keys\":150,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("{\"name\":\"b\",\"id\":2,\"keys\":100,"),
            std::string::npos);
  EXPECT_NE(r.out.find("{\"name\":\"c\",\"id\":3,\"keys\":0,"),
            std::string::npos);

  // The entries are exactly the live keys, each at its current version.
  auto db = SnapshotDb::Open(dir_ + "/snap");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  store::PoolOptions o;
  o.read_only = true;
  auto pool = store::Pool::Open(pool_, o);
  ASSERT_TRUE(pool.ok());
  std::map<uint32_t, std::set<std::string>> seen;
  EntryScan scan(db->get());
  for (; scan.valid(); scan.Next()) {
    auto ks = (*pool)->GetKeyspace(scan.id() == 1 ? "a" : "b");
    ASSERT_TRUE(ks.ok());
    std::string v;
    store::Version version;
    ASSERT_TRUE((*ks)->Get(scan.key(), &v, &version).ok());
    EXPECT_EQ(scan.entry().sequence, version.sequence);
    EXPECT_EQ(scan.entry().log_offset, version.log_offset);
    EXPECT_EQ(scan.entry().value_len, v.size());
    EXPECT_EQ(scan.entry().flags, 0);
    seen[scan.id()].insert(std::string(scan.key()));
  }
  ASSERT_TRUE(scan.Finish().ok());
  EXPECT_EQ(seen[1].size(), 150u);
  EXPECT_EQ(seen[2].size(), 100u);
  for (int i = 0; i < 200; i += 4) EXPECT_EQ(seen[1].count(Key(i)), 0u);
}

TEST_F(SnapshotTest, ReadableWithRocksdbLdb) {
  if (!std::filesystem::exists("/usr/bin/ldb")) {
    GTEST_SKIP() << "ldb (Debian rocksdb-tools) is not installed";
  }
  MakePool(30);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const std::string ldb = "/usr/bin/ldb --db=" + dir_ + "/snap ";
  auto run = [](const std::string& cmd) {
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd << "\n" << out;
    return out;
  };
  EXPECT_NE(run(ldb + "list_column_families")
                .find("{default, meta, catalog, segments, entries}"),
            std::string::npos);
  const std::string meta = run(ldb + "--column_family=meta scan");
  EXPECT_NE(meta.find("schema_version : 1"), std::string::npos) << meta;
  EXPECT_NE(meta.find("entries : 30"), std::string::npos) << meta;
  EXPECT_EQ(CountLines(run(ldb + "--column_family=entries --hex scan"), "0x"),
            30);
}

TEST_F(SnapshotTest, RestoreRepairsADamagedIndex) {
  MakePool(500, {3, 7, 11});
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const store::KeyspaceInfo k = Info("a");
  // Zero a stretch of the index and flip bytes elsewhere in it.
  Patch(k.index_offset + 64 * 40, std::string(64 * 32, '\0'));
  Patch(k.index_offset + 64 * 300 + 8, std::string(16, '\x5a'));
  Outcome r = Kvadmin("check --pool=" + pool_);
  ASSERT_EQ(r.code, 3) << r.out;
  r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
              "/snap");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("497 entries re-linked, 0 could not be"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("check: ok"), std::string::npos) << r.out;
  r = Kvadmin("check --pool=" + pool_);
  EXPECT_EQ(r.code, 0) << r.out;
  ExpectPoolHoldsModel();
  r = Kvadmin("verify --pool=" + pool_ + " --snapshot=" + dir_ + "/snap");
  EXPECT_EQ(r.code, 0) << r.out;
  // The restored pool takes writes: sequences continue above the old ones.
  {
    auto pool = store::Pool::Open(pool_);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    store::Writer w((*pool)->GetKeyspace("a").value());
    auto put = w.Put(Key(1), "after");
    ASSERT_TRUE(put.ok());
    EXPECT_TRUE(put->had_previous);
    model_["a"][Key(1)] = "after";
  }
  ExpectPoolHoldsModel();
}

TEST_F(SnapshotTest, RestoreBringsBackALostCatalogEntry) {
  MakePool(100);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const std::string good = ReadFile(pool_);
  // Both copies of catalog slot 0 damaged: the keyspace is gone.
  Patch(8192 + 100, "garbage!");
  Patch(8192 + 256 + 100, "garbage!");
  Outcome r = Kvadmin("keyspace list --pool=" + pool_);
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "");
  r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
              "/snap");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("100 entries re-linked"), std::string::npos) << r.out;
  ExpectPoolHoldsModel();
}

// Many entries not re-linked (the 200,005 lines): counted by
// reason and the first five listed; --verbose lists all.
TEST_F(SnapshotTest, RestoreSummarizesManyEntriesNotReLinked) {
  MakePool(50);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const store::KeyspaceInfo k = Info("a");
  std::vector<store::Version> versions(20);
  {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    std::string value;
    for (int i = 0; i < 20; i++) {
      ASSERT_TRUE((*pool)
                      ->GetKeyspace("a")
                      .value()
                      ->Get(Key(i), &value, &versions[i])
                      .ok());
    }
  }
  for (const store::Version& v : versions) {
    Patch(k.log_offset + v.log_offset + 40, "XX");
  }
  const std::string image = ReadFile(pool_);
  Outcome r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
                      "/snap");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(CountLines(r.out, "not re-linked: keyspace"), 5) << r.out;
  EXPECT_NE(r.out.find("... and 15 more not re-linked (--verbose lists every "
                       "one)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("entries not re-linked, by reason:\n  20 entries: the "
                       "log at offset N no longer holds it (record: CRC32C "
                       "mismatch)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("it is not a backup"), std::string::npos) << r.out;
  // The same restore again, --verbose: every entry.
  {
    std::ofstream f(pool_, std::ios::binary | std::ios::trunc);
    f << image;
  }
  r = Kvadmin("restore --yes --verbose --pool=" + pool_ +
              " --snapshot=" + dir_ + "/snap");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(CountLines(r.out, "not re-linked: keyspace"), 20) << r.out;
}

TEST_F(SnapshotTest, RestoreListsEntriesWhoseRecordNoLongerVerifies) {
  MakePool(50);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const store::KeyspaceInfo k = Info("a");
  store::Version v17;
  {
    store::PoolOptions o;
    o.read_only = true;
    auto pool = store::Pool::Open(pool_, o);
    std::string value;
    ASSERT_TRUE(
        (*pool)->GetKeyspace("a").value()->Get(Key(17), &value, &v17).ok());
  }
  // Key 17's record damaged in the log, and the whole index zeroed.
  Patch(k.log_offset + v17.log_offset + 40, "XX");
  Patch(k.index_offset,
        std::string(index_format::PhysicalBuckets(k.bucket_count) * 64, 0));
  Outcome r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
                      "/snap");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(CountLines(r.out, "not re-linked:"), 1) << r.out;
  EXPECT_NE(r.out.find("not re-linked: keyspace 'a' key 'key17': the log at "
                       "offset " +
                       std::to_string(v17.log_offset) +
                       " no longer holds it (record: CRC32C mismatch)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("49 entries re-linked, 1 could not be"),
            std::string::npos);
  EXPECT_EQ(Kvadmin("check --pool=" + pool_).code, 0);
  model_["a"].erase(Key(17));
  ExpectPoolHoldsModel();
}

TEST_F(SnapshotTest, VerifyListsExactlyThePutsAndDeletes) {
  MakePool(40);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  const std::string verify =
      "verify --pool=" + pool_ + " --snapshot=" + dir_ + "/snap";
  EXPECT_EQ(Kvadmin(verify).code, 0);
  {
    auto pool = store::Pool::Open(pool_);
    ASSERT_TRUE(pool.ok());
    store::Writer w((*pool)->GetKeyspace("a").value());
    ASSERT_TRUE(w.Put("new-key", "x").ok());
    ASSERT_TRUE(w.Put(Key(5), "changed").ok());
    ASSERT_TRUE(w.Delete(Key(9)).ok());
  }
  Outcome r = Kvadmin(verify);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(CountLines(r.out, "+ "), 1) << r.out;
  EXPECT_EQ(CountLines(r.out, "- "), 1) << r.out;
  EXPECT_EQ(CountLines(r.out, "~ "), 1) << r.out;
  EXPECT_NE(r.out.find("+ a new-key\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("~ a key5 (sequence "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("- a key9\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("keyspace a: 40 in the snapshot, 40 in the pool: 1 "
                       "added, 1 removed, 1 changed"),
            std::string::npos)
      << r.out;
  r = Kvadmin(verify + " --limit=1");
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(CountLines(r.out, "+ ") + CountLines(r.out, "- ") +
                CountLines(r.out, "~ "),
            1)
      << r.out;
  EXPECT_NE(r.out.find("... 2 more not listed (--limit=1)"), std::string::npos)
      << r.out;
}

TEST_F(SnapshotTest, RefusedWhileTheWriterLockIsHeld) {
  MakePool(10);
  ASSERT_EQ(Snap(dir_ + "/first").code, 0);
  {
    auto holder = store::Pool::Open(pool_);  // what kvserver does
    ASSERT_TRUE(holder.ok());
    const std::string who = "(pid " + std::to_string(getpid()) + ")";
    Outcome r = Snap(dir_ + "/snap");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("busy: cannot snapshot a pool in use: " + pool_ +
                         " is held for writing by "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(who), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/snap"));
    r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
                "/first");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find(who), std::string::npos) << r.out;
    r = Kvadmin("verify --pool=" + pool_ + " --snapshot=" + dir_ + "/first");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("busy"), std::string::npos) << r.out;
  }
  EXPECT_EQ(Snap(dir_ + "/snap").code, 0);
}

TEST_F(SnapshotTest, ExistingOutIsRefused) {
  MakePool(10);
  std::filesystem::create_directory(dir_ + "/snap");
  Outcome r = Snap(dir_ + "/snap");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("exists; a snapshot never overwrites"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/snap"));
  EXPECT_EQ(Kvadmin("snapshot --pool=" + pool_).code, 2);  // no --out
}

// Each bad snapshot: verify and restore fail with a message saying what is
// wrong, and the pool's bytes stay exactly as they were.
class BadSnapshotTest : public SnapshotTest {
 protected:
  void SetUp() override {
    SnapshotTest::SetUp();
    MakePool(60);
    ASSERT_EQ(Snap(dir_ + "/good").code, 0);
    // Damage the index too: a restore that wrongly went ahead would show.
    Patch(Info("a").index_offset, std::string(4096, '\0'));
    pool_bytes_ = ReadFile(pool_);
  }
  // `info_too`: snapshot-info (which reads only meta and catalog) must
  // refuse it as well.
  void ExpectRefused(const std::string& snap, const std::string& message,
                     bool info_too = true) {
    for (const char* cmd : {"restore", "verify"}) {
      Outcome r = Kvadmin(std::string(cmd) + " --yes --pool=" + pool_ +
                          " --snapshot=" + snap);
      EXPECT_EQ(r.code, 1) << cmd << ": " << r.out;
      EXPECT_NE(r.out.find(message), std::string::npos) << cmd << ": " << r.out;
      EXPECT_EQ(ReadFile(pool_), pool_bytes_) << cmd << " changed the pool";
    }
    if (info_too) {
      EXPECT_EQ(Kvadmin("snapshot-info --snapshot=" + snap).code, 1);
    }
  }
  std::string Copy(const std::string& name) {
    const std::string to = dir_ + "/" + name;
    std::filesystem::copy(dir_ + "/good", to);
    return to;
  }
  // Opens a copy with RocksDB itself and changes it behind kvadmin's back.
  void Tamper(const std::string& dir, const std::string& cf,
              const std::string& key, const std::string* value) {
    rocksdb::Options o = SnapshotDb::WriteOnceOptions();
    o.create_if_missing = false;
    o.error_if_exists = false;
    std::vector<rocksdb::ColumnFamilyDescriptor> d;
    for (const char* n : {"default", "meta", "catalog", "segments", "entries"})
      d.emplace_back(n, o);
    std::vector<rocksdb::ColumnFamilyHandle*> h;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir, d, &h, &db).ok());
    const int i = cf == "meta" ? 1 : 4;
    if (value != nullptr) {
      ASSERT_TRUE(db->Put({}, h[i], key, *value).ok());
    } else {
      ASSERT_TRUE(db->Delete({}, h[i], key).ok());
    }
    for (auto* x : h) ASSERT_TRUE(db->DestroyColumnFamilyHandle(x).ok());
    ASSERT_TRUE(db->Close().ok());
    delete db;
  }
  std::string pool_bytes_;
};

TEST_F(BadSnapshotTest, MissingDirectory) {
  ExpectRefused(dir_ + "/nothing", "not_found: no snapshot at");
}

TEST_F(BadSnapshotTest, NotRocksdb) {
  std::filesystem::create_directory(dir_ + "/junk");
  std::ofstream(dir_ + "/junk/notes.txt") << "hello\n";
  ExpectRefused(dir_ + "/junk", "is not an rpkv snapshot (no RocksDB database");
  std::ofstream(dir_ + "/junk/CURRENT") << "hello\n";
  ExpectRefused(dir_ + "/junk", "is damaged: Corruption: CURRENT file");
}

TEST_F(BadSnapshotTest, RocksdbButNotASnapshot) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir_ + "/other", &db).ok());
  ASSERT_TRUE(db->Put({}, "k", "v").ok());
  delete db;
  ExpectRefused(dir_ + "/other",
                "is a RocksDB database but not an rpkv snapshot (it has no "
                "'meta' column family)");
}

TEST_F(BadSnapshotTest, WrongSchemaVersion) {
  const std::string snap = Copy("v2");
  const std::string two = "2";
  Tamper(snap, "meta", "schema_version", &two);
  ExpectRefused(snap, "has schema version 2; this kvadmin reads version 1");
}

// Pool formats: a snapshot of format 3 (before the commit log; its slots
// lie where format 4's do) restores; one of a format this kvadmin does not
// know is refused, the pool unchanged.
TEST_F(BadSnapshotTest, PoolFormatsItRestoresAndOneItDoesNot) {
  const std::string five = "5";
  const std::string snap5 = Copy("format5");
  Tamper(snap5, "meta", "pool_format_version", &five);
  Outcome r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + snap5);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is of a format 5 pool; this kvadmin restores format "
                       "2, 3 and 4 snapshots only (nothing changed)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ReadFile(pool_), pool_bytes_);
  const std::string three = "3";
  const std::string snap3 = Copy("format3");
  Tamper(snap3, "meta", "pool_format_version", &three);
  r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + snap3);
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST_F(BadSnapshotTest, Incomplete) {
  const std::string snap = Copy("partial");
  Tamper(snap, "meta", "complete", nullptr);
  ExpectRefused(snap, "is incomplete");
}

TEST_F(BadSnapshotTest, EntryChangedBehindItsChecksum) {
  const std::string snap = Copy("tampered");
  // Same count, one entry's bytes replaced (a well-formed 38-byte value).
  const std::string forged(38, '\1');
  Tamper(snap, "entries", std::string("\0\0\0\1key7", 8), &forged);
  ExpectRefused(snap, "do not match its meta", false);
}

TEST_F(BadSnapshotTest, Truncated) {
  const std::string snap = Copy("truncated");
  for (const auto& e : std::filesystem::directory_iterator(snap)) {
    if (e.path().extension() == ".sst") {
      std::filesystem::resize_file(e.path(), e.file_size() / 2);
    }
  }
  ExpectRefused(snap, "corruption: snapshot " + snap);
}

TEST_F(BadSnapshotTest, AnotherPoolsSnapshot) {
  const std::string other = dir_ + "/other-pool";
  {
    auto pool = store::Pool::Create(other, 16 << 20);
    ASSERT_TRUE(pool.ok());
    ASSERT_TRUE((*pool)->CreateKeyspace("a", Small()).ok());
  }
  ASSERT_EQ(
      Kvadmin("snapshot --pool=" + other + " --out=" + dir_ + "/foreign").code,
      0);
  ExpectRefused(dir_ + "/foreign", "is of another pool (uuid ", false);
  // --force: the operator insists; the catalog is restored, no entry was
  // there to re-link.
  Outcome r = Kvadmin("restore --yes --force --pool=" + pool_ +
                      " --snapshot=" + dir_ + "/foreign");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: --force"), std::string::npos) << r.out;
  EXPECT_NE(ReadFile(pool_), pool_bytes_);
}

TEST_F(SnapshotTest, RestoreKeepsNewKeyspacesAndRefusesConflictingOnes) {
  MakePool(20);
  ASSERT_EQ(Snap(dir_ + "/snap").code, 0);
  ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                    " --name=later --log_size=1M --segment_size=64K "
                    "--max_value_size=4K --index_capacity=64")
                .code,
            0);
  Outcome r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
                      "/snap");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("note: kept keyspace 'later' (not in the snapshot)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(Kvadmin("keyspace list --pool=" + pool_).out.find("later"),
            std::string::npos);
  // "a" dropped and its region reused by "b": restoring "a" would destroy b.
  ASSERT_EQ(Kvadmin("keyspace drop --yes --pool=" + pool_ + " --name=a").code,
            0);
  ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                    " --name=b --log_size=1M --segment_size=64K "
                    "--max_value_size=4K --index_capacity=64")
                .code,
            0);
  const std::string before = ReadFile(pool_);
  r = Kvadmin("restore --yes --pool=" + pool_ + " --snapshot=" + dir_ +
              "/snap");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("keyspace 'b' (id 3), which the snapshot does not "
                       "hold, uses the name, id or region of the snapshot's "
                       "keyspace 'a'; drop it first"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(ReadFile(pool_), before);
}

// A pool a crash left unrepaired (read-only opens do not repair): an
// update's old slot still set, and a slot whose record never reached the
// log. The snapshot takes the newest version and leaves the torn slot out.
TEST_F(SnapshotTest, UncleanPoolNewestVersionWinsAndTornSlotsAreSkipped) {
  constexpr size_t kSize = 16 << 20;
  auto mapping = store::MemoryMapping::Zeroed(kSize, nullptr);
  const uint8_t* base = mapping->base();
  auto pool = store::Pool::CreateOn(std::move(mapping), {});
  ASSERT_TRUE(pool.ok());
  auto ks = (*pool)->CreateKeyspace("a", Small());
  ASSERT_TRUE(ks.ok());
  const auto* index =
      reinterpret_cast<const uint64_t*>(base + (*ks)->info().index_offset);
  const size_t slots =
      index_format::PhysicalBuckets((*ks)->info().bucket_count) * 8;
  store::Writer w(*ks);
  ASSERT_TRUE(w.Put("key", "one").ok());
  size_t pos = 0;
  while (index[pos] == 0) pos++;
  const uint64_t old_slot = index[pos];
  ASSERT_TRUE(w.Put("key", "two").ok());
  ASSERT_TRUE(w.Put("other", "x").ok());
  std::string image(reinterpret_cast<const char*>(base), kSize);
  // The old version's slot back, and a slot to 64 zero bytes of the log.
  std::memcpy(image.data() + (*ks)->info().index_offset + pos * 8, &old_slot,
              8);
  size_t empty = 0;
  while (index[empty] != 0 || empty == pos) empty++;
  ASSERT_LT(empty, slots);
  const uint64_t torn = index_format::PackSlot({0x1234, 1, 1000});
  std::memcpy(image.data() + (*ks)->info().index_offset + empty * 8, &torn, 8);
  // Taken while the pool is open, the image is not marked cleanly closed:
  // read-only opens leave both slots as they are.
  std::ofstream(pool_, std::ios::binary) << image;
  (void)w.Close();

  Outcome r = Snap(dir_ + "/snap");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 keyspaces, 2 entries"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 older versions of updated keys"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: 1 index slots do not hold a committed "
                       "version"),
            std::string::npos)
      << r.out;
  auto db = SnapshotDb::Open(dir_ + "/snap");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ((*db)->MetaNumber("skipped_slots").value(), 1u);
  store::Version newest;
  std::string v;
  ASSERT_TRUE((*ks)->Get("key", &v, &newest).ok());
  ASSERT_EQ(v, "two");
  EntryScan scan(db->get());
  ASSERT_TRUE(scan.valid());
  EXPECT_EQ(scan.key(), "key");
  EXPECT_EQ(scan.entry().sequence, newest.sequence);
}

}  // namespace
}  // namespace kv::kvadmin
