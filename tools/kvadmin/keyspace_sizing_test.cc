// The default keyspace log size leaves room for more keyspaces; kvadmin
// info says how much; kvadmin's --help and flag errors follow the shared
// tool rule (kv_tool_flags).
#include "keyspace_sizing.h"

#include <gtest/gtest.h>

#include "kv/index_format.h"
#include "kv/store/keyspace_sizing.h"
#include "kvadmin_test_util.h"

namespace kv::kvadmin {
namespace {

using testing::Kvadmin;
using testing::Outcome;
using KvadminSizingTest = testing::KvadminDirTest;

TEST(CreateLogSizeTest, HalfLessTheIndexInWholeSegmentsAtLeastThree) {
  store::KeyspaceOptions o;  // 65,536 keys, 4 MiB segments
  const uint64_t index = store::IndexRegionBytes(o.index_capacity);
  // The index header page, then 16,384 buckets plus the probe overflow,
  // region-aligned.
  EXPECT_EQ(index, index_format::kIndexHeaderBytes +
                       ((16384 + index_format::kProbeBuckets - 1) * 64 + 4095) /
                           4096 * 4096);
  EXPECT_EQ(CreateLogSize(1ull << 30, o),
            ((512ull << 20) - index) / (4 << 20) * (4 << 20));  // 508 MiB
  EXPECT_EQ(CreateLogSize((1ull << 30) + 5, o), 508ull << 20);
  EXPECT_EQ(CreateLogSize(100ull << 20, o), 48ull << 20);
  EXPECT_EQ(CreateLogSize(10ull << 20, o), 12ull << 20);  // at least three
  EXPECT_EQ(CreateLogSize(0, o), 12ull << 20);
  // The store's rule itself says "no room" below three segments.
  EXPECT_EQ(store::DefaultLogSize(10ull << 20, o), 0u);
  EXPECT_EQ(store::DefaultLogSize(100ull << 20, o), 48ull << 20);
}

TEST_F(KvadminSizingTest, DefaultKeyspacesLeaveRoomForMore) {
  ASSERT_EQ(Kvadmin("create --pool=" + pool_ + " --size=1G").code, 0);
  Outcome r = Kvadmin("info --pool=" + pool_);
  EXPECT_NE(r.out.find("new keyspace:   room for a log of up to"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("without --log_size gives 508.0 MiB"), std::string::npos)
      << r.out;
  r = Kvadmin("keyspace create --pool=" + pool_ + " --keyspace=default");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("log 508.0 MiB"), std::string::npos) << r.out;
  // --name still works; the second and third keyspace fit too.
  r = Kvadmin("keyspace create --pool=" + pool_ + " --name=second");
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(
      Kvadmin("keyspace create --pool=" + pool_ + " --keyspace=third").code, 0);
  r = Kvadmin("keyspace list --pool=" + pool_);
  EXPECT_EQ(testing::CountLines(r.out, "second\t"), 1) << r.out;
  EXPECT_EQ(testing::CountLines(r.out, "third\t"), 1) << r.out;
  r = Kvadmin("info --pool=" + pool_);
  EXPECT_NE(r.out.find("new keyspace:   room for a log of up to"),
            std::string::npos)
      << r.out;
}

TEST_F(KvadminSizingTest, InfoSaysWhenNothingFits) {
  // 16M holds a keyspace of 1M segments (create's own minimum rule).
  ASSERT_EQ(
      Kvadmin("create --pool=" + pool_ + " --size=16M --segment_size=1M").code,
      0);
  ASSERT_EQ(Kvadmin("keyspace create --pool=" + pool_ +
                    " --keyspace=all --log_size=12M")
                .code,
            0);
  Outcome r = Kvadmin("info --pool=" + pool_);
  EXPECT_NE(r.out.find("new keyspace:   no room (needs"), std::string::npos)
      << r.out;
}

TEST_F(KvadminSizingTest, HelpShowsOwnFlagsAndUnknownFlagsExitTwo) {
  Outcome r = Kvadmin("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--keyspace=string"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--log_size=string"), std::string::npos);
  EXPECT_EQ(r.out.find("flagfile"), std::string::npos) << r.out;
  r = Kvadmin("info --pool=" + pool_ + " --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("kvadmin: unknown flag --bogus"), std::string::npos)
      << r.out;
  EXPECT_EQ(Kvadmin("info --index_capacity=lots").code, 2);
}

}  // namespace
}  // namespace kv::kvadmin
