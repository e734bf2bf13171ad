// ShardTable (server/src/shard_table.h): what a cluster node admits,
// decides and acknowledges.
#include "shard_table.h"

#include <gtest/gtest.h>

#include <atomic>

namespace kv::server {
namespace {

TEST(ShardTableTest, NothingIsServedUntilTheLeaseCheckIsSet) {
  ShardTable t(4);
  t.Set({{"users.s0", 3}});
  EXPECT_TRUE(t.CheckAdmit("users.s0", nullptr).IsWrongShard());
  EXPECT_FALSE(t.MayAcknowledge());
}

TEST(ShardTableTest, OwnedShardsAtTheirEpochWhileTheLeaseLives) {
  ShardTable t(4);
  std::atomic<bool> alive{true};
  t.SetLeaseCheck([&] { return alive.load(); });
  t.Set({{"users.s0", 3}, {"users.s2", 1}});
  uint32_t epoch = 0;
  ASSERT_TRUE(t.CheckAdmit("users.s0", &epoch).ok());
  EXPECT_EQ(epoch, 3u);
  EXPECT_TRUE(t.CheckRequest("users.s0", 3).ok());
  EXPECT_TRUE(t.MayAcknowledge());

  // Another shard, a plain keyspace, a stale and a future epoch.
  Status st = t.CheckAdmit("users.s1", nullptr);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("node 4 does not serve shard 'users.s1'"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(t.CheckAdmit("default", nullptr).IsWrongShard());
  st = t.CheckRequest("users.s0", 2);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("at map epoch 3, the request names epoch 2"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(t.CheckRequest("users.s0", 4).IsWrongShard());

  // Past the lease deadline: nothing admitted, decided or acknowledged,
  // before any fence callback ran.
  alive = false;
  st = t.CheckRequest("users.s0", 3);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("past its lease deadline"), std::string::npos)
      << st.message();
  EXPECT_FALSE(t.MayAcknowledge());
  alive = true;
  EXPECT_TRUE(t.CheckRequest("users.s0", 3).ok());
}

TEST(ShardTableTest, SetReportsLostShardsAndFenceIsFinal) {
  ShardTable t(1);
  t.SetLeaseCheck([] { return true; });
  EXPECT_TRUE(t.Set({{"a.s0", 1}, {"a.s1", 1}}).empty());
  const std::vector<std::string> lost = t.Set({{"a.s1", 2}});
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0], "a.s0");
  EXPECT_TRUE(t.CheckAdmit("a.s0", nullptr).IsWrongShard());
  EXPECT_TRUE(t.CheckRequest("a.s1", 2).ok());

  t.Fence();
  EXPECT_TRUE(t.fenced());
  EXPECT_FALSE(t.MayAcknowledge());
  Status st = t.CheckRequest("a.s1", 2);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("fenced"), std::string::npos) << st.message();
  // A map that arrives later does not bring anything back.
  t.Set({{"a.s1", 2}});
  EXPECT_TRUE(t.owned().empty());
  EXPECT_TRUE(t.CheckAdmit("a.s1", nullptr).IsWrongShard());
}

// A move's target receives replica COMMITs for a shard it does not own
// yet: only from peers writing at the move's epoch, only while its lease
// lives, and never for a shard it owns (owned and incoming are apart).
TEST(ShardTableTest, IncomingShardsAdmitPeersAtTheirEpochOnly) {
  ShardTable t(2);
  std::atomic<bool> alive{true};
  t.SetLeaseCheck([&] { return alive.load(); });
  t.Set({{"a.s0", 4}});
  t.SetIncoming({{"a.s1", 7}});
  EXPECT_TRUE(t.CheckPeer("a.s1", 7).ok());
  Status st = t.CheckPeer("a.s1", 6);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("at map epoch 7, the request names epoch 6"),
            std::string::npos)
      << st.message();
  // An owned shard takes no copies, an incoming one no clients.
  st = t.CheckPeer("a.s0", 4);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("node 2 receives no copy of shard 'a.s0'"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(t.CheckAdmit("a.s1", nullptr).IsWrongShard());
  EXPECT_TRUE(t.CheckRequest("a.s1", 7).IsWrongShard());
  // Past the deadline, and after the fence: nothing.
  alive = false;
  EXPECT_TRUE(t.CheckPeer("a.s1", 7).IsWrongShard());
  alive = true;
  t.Fence();
  EXPECT_TRUE(t.CheckPeer("a.s1", 7).IsWrongShard());
  t.SetIncoming({{"a.s1", 7}});
  EXPECT_TRUE(t.CheckPeer("a.s1", 7).IsWrongShard()) << "fencing is final";
}

// A backup takes its primary's copies at the backup's epoch only: a
// primary at a stale epoch (deposed, or not yet at the newest map) is
// refused; a backup is served to no client; the fence ends it.
TEST(ShardTableTest, BackupsAdmitTheirPrimaryAtTheirEpochOnly) {
  ShardTable t(3);
  std::atomic<bool> alive{true};
  t.SetLeaseCheck([&] { return alive.load(); });
  t.SetBackups({{"a.s2", 5}});
  EXPECT_EQ(t.BackupEpoch("a.s2"), 5u);
  EXPECT_EQ(t.BackupEpoch("a.s3"), 0u);
  EXPECT_TRUE(t.CheckPeer("a.s2", 5).ok());
  Status st = t.CheckPeer("a.s2", 4);
  EXPECT_TRUE(st.IsWrongShard());
  EXPECT_NE(st.message().find("at map epoch 5, the request names epoch 4"),
            std::string::npos)
      << st.message();
  EXPECT_TRUE(t.CheckPeer("a.s3", 5).IsWrongShard());
  EXPECT_TRUE(t.CheckAdmit("a.s2", nullptr).IsWrongShard());
  EXPECT_TRUE(t.CheckRequest("a.s2", 5).IsWrongShard());
  alive = false;
  EXPECT_TRUE(t.CheckPeer("a.s2", 5).IsWrongShard());
  alive = true;
  t.SetBackups({});
  EXPECT_TRUE(t.CheckPeer("a.s2", 5).IsWrongShard());
  t.SetBackups({{"a.s2", 6}});
  t.Fence();
  EXPECT_TRUE(t.CheckPeer("a.s2", 6).IsWrongShard());
  t.SetBackups({{"a.s2", 6}});
  EXPECT_TRUE(t.backups().empty()) << "fencing is final";
}

// A move's source releases its shard at the hand-off: it leaves the owned
// shards at once and the map (which still names this node until the
// switch) does not bring it back.
TEST(ShardTableTest, AReleasedShardStaysOutUntilUnreleased) {
  ShardTable t(1);
  t.SetLeaseCheck([] { return true; });
  t.Set({{"a.s0", 3}, {"a.s1", 1}});
  t.Release("a.s0");
  EXPECT_TRUE(t.released("a.s0"));
  EXPECT_TRUE(t.CheckRequest("a.s0", 3).IsWrongShard());
  t.Set({{"a.s0", 3}, {"a.s1", 1}});
  EXPECT_TRUE(t.CheckRequest("a.s0", 3).IsWrongShard())
      << "the map brought a released shard back";
  EXPECT_TRUE(t.CheckRequest("a.s1", 1).ok());
  t.Unrelease("a.s0");
  t.Set({{"a.s0", 3}, {"a.s1", 1}});
  EXPECT_TRUE(t.CheckRequest("a.s0", 3).ok());
  // Incoming shards one at a time.
  t.AddIncoming("b.s2", 7);
  EXPECT_EQ(t.IncomingEpoch("b.s2"), 7u);
  EXPECT_TRUE(t.CheckPeer("b.s2", 7).ok());
  t.RemoveIncoming("b.s2");
  EXPECT_EQ(t.IncomingEpoch("b.s2"), 0u);
  EXPECT_TRUE(t.CheckPeer("b.s2", 7).IsWrongShard());
}

}  // namespace
}  // namespace kv::server
