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

}  // namespace
}  // namespace kv::cluster
