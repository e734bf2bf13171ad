// kvadmin's cluster commands on a FakeEtcd (unit): what status prints,
// create-keyspace's refusals and its timeout, without processes.
#include "cluster_commands.h"

#include <gtest/gtest.h>

#include <sstream>

#include "commands.h"
#include "kv/cluster/fake_etcd.h"
#include "kv/cluster/node_registration.h"
#include "kv/cluster/placement.h"

namespace kv::kvadmin {
namespace {

using cluster::ClusterMap;
using cluster::KeyspaceSpec;
using std::chrono::milliseconds;

class ClusterCommandsTest : public ::testing::Test {
 protected:
  void Register(uint32_t id) {
    ASSERT_TRUE(etcd_
                    .Put(keys_.node(id),
                         cluster::NodeRegistration{
                             id, "127.0.0.1:" + std::to_string(7400 + id), 1}
                             .Encode())
                    .ok());
  }
  void PutMap(const ClusterMap& m) {
    ASSERT_TRUE(etcd_.Put(keys_.map(), m.Encode()).ok());
  }
  int Status() {
    out_.str("");
    err_.str("");
    return ClusterStatus(etcd_, keys_, out_, err_);
  }
  int Create(const KeyspaceSpec& spec, milliseconds wait) {
    out_.str("");
    err_.str("");
    return ClusterCreateKeyspace(etcd_, keys_, spec, wait, out_, err_);
  }

  cluster::FakeEtcd etcd_;
  cluster::EtcdKeys keys_ = cluster::EtcdKeys::ForCluster("t").value();
  std::ostringstream out_, err_;
};

TEST_F(ClusterCommandsTest, StatusShowsNodesShardsAndWhatIsUnavailable) {
  Register(1);
  Register(2);
  ASSERT_TRUE(etcd_.Put(keys_.controller(), "2").ok());
  // users: shard 0 on nodes 1 (primary) and 3, shard 1 on node 3 (dead).
  PutMap(ClusterMap::Build(
             {{"users",
               5,
               {{0, 2, {1, 3}, {{0, 511}}}, {1, 1, {3}, {{512, 1023}}}}}})
             .value());
  ASSERT_TRUE(
      etcd_.Put(keys_.keyspace("orders"), KeyspaceSpec{"orders", 2, 1}.Encode())
          .ok());
  ASSERT_TRUE(etcd_.Put(keys_.keyspace("bad"), "{").ok());
  ASSERT_EQ(Status(), kExitOk) << err_.str();
  const std::string s = out_.str();
  EXPECT_NE(s.find("controller: node 2\n"), std::string::npos) << s;
  EXPECT_NE(s.find("nodes: 3 (2 alive)"), std::string::npos) << s;
  EXPECT_NE(s.find("1     127.0.0.1:7401  yes    1          1"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("3     -               no     1          2"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("users: id 5, 2 shards, 1 unavailable"), std::string::npos)
      << s;
  EXPECT_NE(s.find("0      0-511     2      1,3       ok"), std::string::npos)
      << s;
  EXPECT_NE(s.find("1      512-1023  1      3         unavailable (primary "
                   "node 3 is not live)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("pending (desired, not in the map yet): 1\n  orders: 2 "
                   "shards x 1 replica"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("problems: 1\n  /rpkv/t/keyspaces/bad: keyspace spec "
                   "'bad': not a JSON object"),
            std::string::npos)
      << s;
}

TEST_F(ClusterCommandsTest, StatusOfAnEmptyCluster) {
  ASSERT_EQ(Status(), kExitOk) << err_.str();
  EXPECT_NE(out_.str().find("controller: none (no kvserver --cluster is "
                            "running)"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("keyspaces: none (no map in etcd yet)"),
            std::string::npos)
      << out_.str();
}

TEST_F(ClusterCommandsTest, StatusReportsAGarbageMapAndFails) {
  Register(1);
  ASSERT_TRUE(etcd_.Put(keys_.map(), "{\"format\":1,\"slots\":7}").ok());
  EXPECT_EQ(Status(), kExitFailed);
  EXPECT_NE(out_.str().find("nodes: 1 (1 alive)"), std::string::npos)
      << out_.str();  // what could be read is still shown
  EXPECT_NE(out_.str().find("keyspaces: unknown (the map does not decode)"),
            std::string::npos);
  EXPECT_NE(err_.str().find("the cluster map at /rpkv/t/map does not decode: "
                            "corruption: cluster map: \"slots\" 7"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("etcdctl del /rpkv/t/map"), std::string::npos);
}

TEST_F(ClusterCommandsTest, CreateWritesTheDesiredKeyOnceOnly) {
  EXPECT_EQ(Create({"orders", 3, 2}, milliseconds(0)), kExitOk) << err_.str();
  EXPECT_EQ(etcd_.Get(keys_.keyspace("orders"))->kvs.at(0).value,
            R"({"replicas":2,"shards":3})");
  // Again, even with other counts: refused, the first request kept.
  EXPECT_EQ(Create({"orders", 5, 1}, milliseconds(0)), kExitFailed);
  EXPECT_NE(err_.str().find("keyspace 'orders' already exists: it is desired "
                            "at /rpkv/t/keyspaces/orders (3 shards x 2 "
                            "replicas), not yet in the map"),
            std::string::npos)
      << err_.str();
  EXPECT_EQ(etcd_.Get(keys_.keyspace("orders"))->kvs.at(0).value,
            R"({"replicas":2,"shards":3})");
}

TEST_F(ClusterCommandsTest, CreateRefusesAKeyspaceTheMapHolds) {
  Register(1);
  PutMap(cluster::PlanPlacement(ClusterMap(), {{1}, {{"users", 2, 1}}, {}})
             .value()
             .map);
  const int64_t rev = etcd_.Get(keys_.map())->revision;
  EXPECT_EQ(Create({"users", 2, 1}, milliseconds(0)), kExitFailed);
  EXPECT_NE(err_.str().find("keyspace 'users' already exists in the cluster "
                            "map (nothing changed)"),
            std::string::npos)
      << err_.str();
  EXPECT_TRUE(etcd_.Get(keys_.keyspace("users"))->kvs.empty());
  EXPECT_EQ(etcd_.Get(keys_.map())->revision, rev);  // nothing written
}

TEST_F(ClusterCommandsTest, CreateRefusesBadSpecsAsUsageErrors) {
  for (const KeyspaceSpec& spec :
       {KeyspaceSpec{"a b", 1, 1}, KeyspaceSpec{std::string(58, 'n'), 1, 1},
        KeyspaceSpec{"k", 1025, 1}, KeyspaceSpec{"k", 1, 9}}) {
    EXPECT_EQ(Create(spec, milliseconds(0)), kExitUsage) << spec.name;
    EXPECT_FALSE(err_.str().empty());
  }
  EXPECT_TRUE(etcd_.GetPrefix(keys_.keyspaces_prefix())->kvs.empty());
}

TEST_F(ClusterCommandsTest, CreateTimesOutSayingNoControllerRuns) {
  EXPECT_EQ(Create({"orders", 2, 1}, milliseconds(1200)), kExitFailed);
  const std::string e = err_.str();
  EXPECT_NE(e.find("waiting for the controller to place 'orders' (1 s of 1; "
                   "no controller elected)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("timed out after 1 s: no controller is running (no "
                   "kvserver --cluster is up in cluster 't')"),
            std::string::npos)
      << e;
  // The request stays for a controller to come.
  EXPECT_FALSE(etcd_.Get(keys_.keyspace("orders"))->kvs.empty());
}

TEST_F(ClusterCommandsTest, CreateReturnsOnceTheMapHoldsTheKeyspace) {
  Register(1);
  ASSERT_TRUE(etcd_.Put(keys_.controller(), "1").ok());
  // A stand-in controller: places the keyspace after half a second.
  std::thread controller([&] {
    std::this_thread::sleep_for(milliseconds(500));
    PutMap(cluster::PlanPlacement(ClusterMap(), {{1}, {{"orders", 2, 1}}, {}})
               .value()
               .map);
  });
  EXPECT_EQ(Create({"orders", 2, 1}, milliseconds(10000)), kExitOk)
      << err_.str();
  controller.join();
  EXPECT_NE(out_.str().find("keyspace orders: id 1, 2 shards"),
            std::string::npos)
      << out_.str();
  EXPECT_NE(out_.str().find("512-1023  1      1         ok"), std::string::npos)
      << out_.str();
}

}  // namespace
}  // namespace kv::kvadmin
