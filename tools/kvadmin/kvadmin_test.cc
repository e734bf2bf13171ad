// kvadmin end to end: runs the real binary (exit codes, messages) and the
// command functions.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "commands.h"
#include "kv/store/keyspace_sizing.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "kvadmin_test_util.h"

namespace kv::kvadmin {
namespace {

using testing::Kvadmin;
using testing::Outcome;
using KvadminTest = testing::KvadminDirTest;

TEST(ParseSizeTest, UnitsAndErrors) {
  EXPECT_EQ(ParseSize("4096").value(), 4096u);
  EXPECT_EQ(ParseSize("64K").value(), 65536u);
  EXPECT_EQ(ParseSize("16m").value(), 16u << 20);
  EXPECT_EQ(ParseSize("1GiB").value(), 1u << 30);
  EXPECT_EQ(ParseSize("2T").value(), 2ull << 40);
  EXPECT_TRUE(ParseSize("").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSize("G").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSize("1X").status().IsInvalidArgument());
  EXPECT_TRUE(ParseSize("99999999999P").status().IsInvalidArgument());
}

TEST_F(KvadminTest, HelpAndUsageErrors) {
  Outcome r = Kvadmin("--help");
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("kvadmin create"), std::string::npos);
  EXPECT_EQ(Kvadmin("").code, kExitUsage);
  EXPECT_EQ(Kvadmin("frobnicate --pool=" + pool_).code, kExitUsage);
  r = Kvadmin("create --pool=" + pool_);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.out.find("--size"), std::string::npos);
  r = Kvadmin("create --pool=" + pool_ + " --size=12Q");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.out.find("unknown unit"), std::string::npos);
}

TEST_F(KvadminTest, CreateKeyspacesInfoCheck) {
  Outcome r = Kvadmin("create --pool=" + pool_ + " --size=64M");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  r = Kvadmin("create --pool=" + pool_ + " --size=64M");
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("File exists"), std::string::npos) << r.out;
  r = Kvadmin(
      "keyspace create --pool=" + pool_ +
      " --name=users --log_size=16M --segment_size=1M --max_value_size=64K");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  r = Kvadmin("keyspace create --pool=" + pool_ + " --name='bad name'");
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("invalid_argument"), std::string::npos) << r.out;
  r = Kvadmin("keyspace list --pool=" + pool_);
  ASSERT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("users"), std::string::npos);
  r = Kvadmin("info --pool=" + pool_);
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("granularity:    page"), std::string::npos) << r.out;
  // The capacity line, in kvcli info's words: nothing used yet.
  EXPECT_NE(r.out.find("keyspace users: 0 keys"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  capacity: log 0 of 16777216 bytes used (0.0%), "
                       "index 0 of "),
            std::string::npos)
      << r.out;
  r = Kvadmin("check --pool=" + pool_);
  EXPECT_EQ(r.code, kExitOk) << r.out;
  r = Kvadmin("keyspace drop --pool=" + pool_ + " --name=users --yes");
  EXPECT_EQ(r.code, kExitOk) << r.out;
  r = Kvadmin("keyspace drop --pool=" + pool_ + " --name=users --yes");
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("not_found"), std::string::npos);
}

// kvadmin create refuses a pool that cannot hold a keyspace, by kvserver's
// rule (store::MinPoolSizeFor), and creates no file; with smaller
// keyspace geometry the same size is fine.
TEST_F(KvadminTest, CreateRefusesAPoolThatHoldsNoKeyspace) {
  Outcome r = Kvadmin("create --pool=" + pool_ + " --size=1M");
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_NE(r.out.find("--size=1M cannot hold a keyspace (3 segments of 4096 "
                       "KiB and an index for 65536 keys, at most half the "
                       "pool): use --size=27M or more"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(pool_));
  const uint64_t need = store::MinPoolSizeFor(65536, 4u << 20);
  EXPECT_EQ(Kvadmin("create --pool=" + pool_ +
                    " --size=" + std::to_string(need - 4096))
                .code,
            kExitUsage);
  r = Kvadmin("create --pool=" + pool_ + " --size=" + std::to_string(need));
  ASSERT_EQ(r.code, kExitOk) << r.out;
  // The smallest pool holds its keyspace, as kvserver would create it.
  r = Kvadmin("keyspace create --pool=" + pool_ + " --keyspace=default");
  EXPECT_EQ(r.code, kExitOk) << r.out;
  std::filesystem::remove(pool_);
  r = Kvadmin("create --pool=" + pool_ +
              " --size=1M --segment_size=64K --index_capacity=64");
  EXPECT_EQ(r.code, kExitOk) << r.out;
}

// keyspace drop and restore destroy data: they ask first; with stdin not
// a terminal and no --yes they refuse, changing nothing.
TEST_F(KvadminTest, DropAndRestoreAskFirstAndRefuseWithoutATerminal) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, kExitOk);
  ASSERT_EQ(
      Kvadmin("keyspace create --pool=" + pool_ + " --keyspace=keep").code,
      kExitOk);
  Outcome r =
      Kvadmin("keyspace drop --pool=" + pool_ + " --keyspace=keep </dev/null");
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_NE(r.out.find("keyspace drop deletes keyspace 'keep' of " + pool_ +
                       " and every key in it: refused, nothing changed. "
                       "stdin is not a terminal, so kvadmin cannot ask; pass "
                       "--yes to go ahead"),
            std::string::npos)
      << r.out;
  r = Kvadmin("keyspace list --pool=" + pool_);
  EXPECT_NE(r.out.find("keep"), std::string::npos) << r.out;
  r = Kvadmin("restore --pool=" + pool_ + " --snapshot=" + dir_ +
              "/none </dev/null");
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_NE(r.out.find("restore replaces the catalog and every index of"),
            std::string::npos)
      << r.out;
  r = Kvadmin("keyspace drop --yes --pool=" + pool_ +
              " --keyspace=keep </dev/null");
  EXPECT_EQ(r.code, kExitOk) << r.out;
}

// A pool kvserver holds: info and keyspace list show it as a live view
// (before: refused, "stop it first"); check, which needs a quiet pool, and
// every writing command are still refused.
TEST_F(KvadminTest, InfoAndListOfAHeldPoolAreALiveView) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=64M").code, kExitOk);
  ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                    " --name=demo --segment_size=1M --max_value_size=64K")
                .code,
            kExitOk);
  auto holder = store::Pool::Open(pool_);  // what kvserver does
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  const std::string who = "(pid " + std::to_string(getpid()) + ")";
  Outcome r = Kvadmin("info --pool=" + pool_);
  EXPECT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("live view: the pool is held for writing by"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(who), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("keyspaces:      1"), std::string::npos) << r.out;
  r = Kvadmin("keyspace list --pool=" + pool_);
  EXPECT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("demo\tid="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("live view"), std::string::npos) << r.out;
  r = Kvadmin("check --pool=" + pool_);
  EXPECT_NE(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("stop it first"), std::string::npos) << r.out;
  r = Kvadmin("keyspace create --pool=" + pool_ + " --name=more");
  EXPECT_NE(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("stop it first"), std::string::npos) << r.out;
}

TEST_F(KvadminTest, CheckAndInfoReportCorruption) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=32M").code, kExitOk);
  {
    std::fstream f(pool_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("XXXXXXXX", 8);
    f.seekp(4096);
    f.write("XXXXXXXX", 8);
  }
  Outcome r = Kvadmin("check --pool=" + pool_);
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("corruption: superblock: bad magic"), std::string::npos)
      << r.out;
  r = Kvadmin("info --pool=" + dir_ + "/missing");
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.out.find("not_found"), std::string::npos) << r.out;
}

// A pool a crash left with an update's old slot still set: check (read-only)
// reports it as a note and passes; the next writable open repairs it.
TEST_F(KvadminTest, CheckListsLeftoversOfAnUncleanShutdownAsNotes) {
  constexpr size_t kSize = 16 << 20;
  auto mapping = store::MemoryMapping::Zeroed(kSize, nullptr);
  const uint8_t* base = mapping->base();
  auto pool = store::Pool::CreateOn(std::move(mapping), {});
  ASSERT_TRUE(pool.ok());
  store::KeyspaceOptions o;
  o.index_capacity = 1024;
  o.segment_size = 64 << 10;
  o.max_value_size = 4096;
  o.log_size = 4 << 20;  // leaves room for a second keyspace
  auto ks = (*pool)->CreateKeyspace("demo", o);
  ASSERT_TRUE(ks.ok()) << ks.status().ToString();
  const auto* index =
      reinterpret_cast<const uint64_t*>(base + (*ks)->info().index_offset);
  store::Writer w(*ks);
  ASSERT_TRUE(w.Put("key", "one").ok());
  size_t pos = 0;
  while (index[pos] == 0) pos++;
  const uint64_t old_slot = index[pos];
  ASSERT_TRUE(w.Put("key", "two").ok());
  ASSERT_EQ(index[pos], 0u);  // the update cleared the old slot
  // The image a power failure leaves if that clear had not reached media.
  std::string image(reinterpret_cast<const char*>(base), kSize);
  std::memcpy(image.data() + (*ks)->info().index_offset + pos * 8, &old_slot,
              8);
  std::ofstream(pool_, std::ios::binary) << image;

  Outcome r = Kvadmin("check --pool=" + pool_);
  EXPECT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("note: keyspace 'demo'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 leftovers of an unclean shutdown"), std::string::npos)
      << r.out;
  // A writable open (here: creating another keyspace) repairs it.
  ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                    " --name=other --segment_size=1M --max_value_size=64K")
                .code,
            kExitOk);
  r = Kvadmin("check --pool=" + pool_);
  EXPECT_EQ(r.code, kExitOk) << r.out;
  EXPECT_EQ(r.out.find("note:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace kv::kvadmin
