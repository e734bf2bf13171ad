#include "kv/cluster/etcd_keys.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kv/cluster_slots.h"

namespace kv::cluster {
namespace {

TEST(EtcdKeysTest, LayoutUnderTheClusterPrefix) {
  Result<EtcdKeys> k = EtcdKeys::ForCluster("prod-1");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->prefix(), "/rpkv/prod-1/");
  EXPECT_EQ(k->map(), "/rpkv/prod-1/map");
  EXPECT_EQ(k->controller(), "/rpkv/prod-1/controller");
  EXPECT_EQ(k->nodes_prefix(), "/rpkv/prod-1/nodes/");
  EXPECT_EQ(k->node(7), "/rpkv/prod-1/nodes/7");
  EXPECT_EQ(k->node(4294967295u), "/rpkv/prod-1/nodes/4294967295");
  EXPECT_EQ(k->keyspaces_prefix(), "/rpkv/prod-1/keyspaces/");
  EXPECT_EQ(k->keyspace("users.v2"), "/rpkv/prod-1/keyspaces/users.v2");
  EXPECT_EQ(k->moves_prefix(), "/rpkv/prod-1/moves/");
  EXPECT_EQ(k->move("users", 3), "/rpkv/prod-1/moves/users/3");
  EXPECT_EQ(k->move_progress_prefix(), "/rpkv/prod-1/move-progress/");
  EXPECT_EQ(k->move_progress("users", 1023),
            "/rpkv/prod-1/move-progress/users/1023");
  EXPECT_EQ(k->drain_prefix(), "/rpkv/prod-1/drain/");
  EXPECT_EQ(k->drain(12), "/rpkv/prod-1/drain/12");
  // No prefix lies inside another: a GetPrefix of one never returns keys
  // of the other.
  EXPECT_FALSE(k->move_progress_prefix().starts_with(k->moves_prefix()));
}

TEST(EtcdKeysTest, BadClusterNamesAreRefused) {
  for (const char* name : {"", "a/b", "A", "x y", "..", "n\n", "é"}) {
    Result<EtcdKeys> k = EtcdKeys::ForCluster(name);
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument) << name;
  }
  EXPECT_FALSE(EtcdKeys::ForCluster(std::string(65, 'a')).ok());
  EXPECT_TRUE(EtcdKeys::ForCluster(std::string(64, 'a')).ok());
  EXPECT_TRUE(EtcdKeys::ForCluster("a_b-9").ok());
}

TEST(EtcdKeysTest, NodeIdRoundTrips) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  for (uint32_t id : {1u, 9u, 10u, 123456u, 4294967295u}) {
    Result<uint32_t> got = k.NodeIdOf(k.node(id));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, id);
  }
}

TEST(EtcdKeysTest, HostileNodeKeysAreRefused) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  for (const char* key :
       {"/rpkv/c/nodes/", "/rpkv/c/nodes/0", "/rpkv/c/nodes/007",
        "/rpkv/c/nodes/-1", "/rpkv/c/nodes/+1", "/rpkv/c/nodes/1x",
        "/rpkv/c/nodes/1/extra", "/rpkv/c/nodes/ 1", "/rpkv/c/nodes/4294967296",
        "/rpkv/c/nodes/99999999999999999999", "/rpkv/d/nodes/1", "/rpkv/c/map",
        "/rpkv/c/nodes1", "nodes/1", "/rpkv/c/nodes/0x10"}) {
    Result<uint32_t> got = k.NodeIdOf(key);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << key;
  }
  // A NUL inside the id.
  EXPECT_FALSE(k.NodeIdOf(std::string("/rpkv/c/nodes/1\0", 16)).ok());
}

TEST(EtcdKeysTest, KeyspaceNamesRoundTrip) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  for (const std::string& name : std::vector<std::string>{
           "a", "users", "Users_2.v-1",
           std::string(kMaxClusterKeyspaceNameSize, 'x')}) {
    Result<std::string> got = k.KeyspaceNameOf(k.keyspace(name));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, name);
  }
}

TEST(EtcdKeysTest, HostileKeyspaceKeysAreRefused) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  const std::string too_long(kMaxClusterKeyspaceNameSize + 1, 'x');
  for (const std::string& key : std::vector<std::string>{
           "/rpkv/c/keyspaces/", "/rpkv/c/keyspaces/a/b",
           "/rpkv/c/keyspaces/a b", "/rpkv/c/keyspaces/" + too_long,
           "/rpkv/c/keyspaces/" + std::string(100000, 'y'),
           "/rpkv/c/keyspaces/\xc3\xa9", "/rpkv/c/keyspaces/a\n",
           "/rpkv/d/keyspaces/a", "/rpkv/c/keyspacesa", "/rpkv/c/nodes/1",
           "keyspaces/a", std::string("/rpkv/c/keyspaces/a\0b", 21)}) {
    Result<std::string> got = k.KeyspaceNameOf(key);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument)
        << key.substr(0, 80);
    // A hostile key is quoted bounded.
    EXPECT_LT(got.status().message().size(), 400u);
  }
}

TEST(EtcdKeysTest, ShardIdsParseStrictly) {
  for (const auto& [text, id] : std::vector<std::pair<std::string, uint32_t>>{
           {"0", 0}, {"7", 7}, {"10", 10}, {"1023", 1023}}) {
    Result<uint32_t> got = ParseShardId(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().ToString();
    EXPECT_EQ(*got, id);
  }
  for (const char* text : {"", "00", "01", "1024", "99999", "-1", "+1", "1x",
                           " 1", "1 ", "0x1", "1.0", "18446744073709551617"}) {
    Result<uint32_t> got = ParseShardId(text);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << text;
  }
  // Node ids keep their rules: 0 is not a node, no leading zero.
  EXPECT_FALSE(ParseNodeId("0").ok());
  EXPECT_FALSE(ParseNodeId("01").ok());
  EXPECT_EQ(ParseNodeId("4294967295").value(), 4294967295u);
}

TEST(EtcdKeysTest, MoveKeysRoundTrip) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  for (const ShardRef& ref : std::vector<ShardRef>{
           {"users", 0},
           {"a", 1023},
           {"Users_2.v-1", 10},
           {std::string(kMaxClusterKeyspaceNameSize, 'x'), 512}}) {
    Result<ShardRef> got = k.MoveOf(k.move(ref.keyspace, ref.shard));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, ref);
  }
}

TEST(EtcdKeysTest, HostileMoveKeysAreRefused) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  const std::string too_long(kMaxClusterKeyspaceNameSize + 1, 'x');
  for (const std::string& key : std::vector<std::string>{
           "/rpkv/c/moves/",
           "/rpkv/c/moves/users",
           "/rpkv/c/moves/users/",
           "/rpkv/c/moves//3",
           "/rpkv/c/moves/users/03",
           "/rpkv/c/moves/users/00",
           "/rpkv/c/moves/users/1024",
           "/rpkv/c/moves/users/-1",
           "/rpkv/c/moves/users/+1",
           "/rpkv/c/moves/users/3/x",
           "/rpkv/c/moves/users/3/",
           "/rpkv/c/moves/users/3 ",
           "/rpkv/c/moves/users/0x3",
           "/rpkv/c/moves/users/99999999999999999999999",
           "/rpkv/c/moves/a b/3",
           "/rpkv/c/moves/" + too_long + "/3",
           "/rpkv/c/moves/" + std::string(100000, 'y') + "/3",
           "/rpkv/c/moves/\xc3\xa9/3",
           "/rpkv/c/moves/a\n/3",
           "/rpkv/d/moves/users/3",
           "/rpkv/c/movesusers/3",
           "/rpkv/c/move-progress/users/3",
           "/rpkv/c/keyspaces/users",
           "moves/users/3",
           std::string("/rpkv/c/moves/users/3\0", 22),
           std::string("/rpkv/c/moves/us\0rs/3", 21)}) {
    Result<ShardRef> got = k.MoveOf(key);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument)
        << key.substr(0, 80);
    EXPECT_LT(got.status().message().size(), 400u);
  }
}

TEST(EtcdKeysTest, DrainKeysRoundTripAndHostileOnesAreRefused) {
  EtcdKeys k = EtcdKeys::ForCluster("c").value();
  for (uint32_t id : {1u, 10u, 4294967295u}) {
    Result<uint32_t> got = k.DrainNodeOf(k.drain(id));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, id);
  }
  for (const char* key :
       {"/rpkv/c/drain/", "/rpkv/c/drain/0", "/rpkv/c/drain/01",
        "/rpkv/c/drain/-1", "/rpkv/c/drain/1/x", "/rpkv/c/drain/4294967296",
        "/rpkv/c/drain/x", "/rpkv/c/nodes/1", "/rpkv/d/drain/1",
        "/rpkv/c/drain1"}) {
    EXPECT_EQ(k.DrainNodeOf(key).status().code(), StatusCode::kInvalidArgument)
        << key;
  }
}

}  // namespace
}  // namespace kv::cluster
