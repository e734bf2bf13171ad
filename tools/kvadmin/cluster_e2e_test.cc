// kvadmin's cluster commands end to end: the real kvadmin binary against
// a real etcd (cluster/tests/etcd_process.h) and real kvserver --cluster
// processes (tests/e2e/server_process.h) on 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "etcd_process.h"
#include "kv/cluster/etcd_http.h"
#include "kvadmin_test_util.h"
#include "server_process.h"

namespace kv::kvadmin {
namespace {

namespace fs = std::filesystem;
using cluster::testing::EtcdProcess;
using e2e::ServerProcess;
using testing::Kvadmin;
using testing::Outcome;

class KvadminClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = cluster::testing::EtcdBinaryMissing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(etcd_.Start().ok());
    char tmpl[] = "/tmp/rpkv-kvadmin-cluster-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    nodes_.clear();  // stopped before their pools go
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Starts kvserver --cluster as node `id` of cluster "t".
  ServerProcess& StartNode(uint32_t id) {
    auto node = std::make_unique<ServerProcess>();
    Status st = node->Start({"--pool=" + dir_ + "/n" + std::to_string(id),
                             "--pool_size=64M", "--cluster=" + etcd_.url(),
                             "--node_id=" + std::to_string(id),
                             "--cluster_name=t", "--lease_ttl_s=2"});
    EXPECT_TRUE(st.ok()) << st.ToString() << node->StderrText();
    nodes_.push_back(std::move(node));
    return *nodes_.back();
  }

  // kvadmin with --cluster and --cluster_name=t, then `args`.
  Outcome Admin(const std::string& args) {
    return Kvadmin("--cluster=" + etcd_.url() + " --cluster_name=t " + args);
  }

  EtcdProcess etcd_;
  std::string dir_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
};

TEST_F(KvadminClusterTest, CreateKeyspaceThenStatusShowsShardsOnLiveNodes) {
  ServerProcess& a = StartNode(1);
  ServerProcess& b = StartNode(2);
  Outcome r = Admin("cluster create-keyspace users --shards=4 --replicas=1");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("keyspace users: id 1, 4 shards"), std::string::npos)
      << r.out;
  // Shards go to the nodes with the fewest primaries: two each.
  EXPECT_NE(r.out.find("0      0-255     1      1         ok"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1      256-511   1      2         ok"),
            std::string::npos)
      << r.out;
  r = Admin("cluster status");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("controller: node "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nodes: 2 (2 alive)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1     " + a.address() + "  yes    2          2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2     " + b.address() + "  yes    2          2"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("users: id 1, 4 shards\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unavailable"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("pending"), std::string::npos) << r.out;

  // Node 2 stops (leaves): its shards are unavailable, and status says so.
  EXPECT_EQ(b.Stop(), 0);
  r = Admin("cluster status");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("nodes: 2 (1 alive)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2     -  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("users: id 1, 4 shards, 2 unavailable"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("unavailable (primary node 2 is not live)"),
            std::string::npos)
      << r.out;
}

TEST_F(KvadminClusterTest, CreatingAKeyspaceTwiceSaysItExists) {
  StartNode(1);
  Outcome r = Admin("cluster create-keyspace users --shards=2");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  r = Admin("cluster create-keyspace users --shards=2");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("keyspace 'users' already exists in the cluster map "
                       "(nothing changed)"),
            std::string::npos)
      << r.out;
}

TEST_F(KvadminClusterTest, StatusReportsAGarbageMapAndExitsNonZero) {
  auto etcd = cluster::EtcdHttp::Open(etcd_.url());
  ASSERT_TRUE(etcd.ok());
  ASSERT_TRUE((*etcd)->Put("/rpkv/t/map", "[[[ not a map").ok());
  Outcome r = Admin("cluster status");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("the cluster map at /rpkv/t/map does not decode: "
                       "corruption: cluster map: not a JSON object"),
            std::string::npos)
      << r.out;
  // create-keyspace refuses to add to a cluster whose map is unreadable.
  r = Admin("cluster create-keyspace users");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("does not decode"), std::string::npos) << r.out;
}

TEST_F(KvadminClusterTest, WithoutAControllerCreateTimesOutSayingSo) {
  Outcome r = Admin("cluster create-keyspace users --wait_s=2");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("waiting for the controller to place 'users' (1 s of "
                       "2; no controller elected)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("timed out after 2 s: no controller is running (no "
                       "kvserver --cluster is up in cluster 't')"),
            std::string::npos)
      << r.out;
  // The request waits in etcd: a node that starts later creates it.
  r = Admin("cluster status");
  EXPECT_NE(r.out.find("pending (desired, not in the map yet): 1\n  users: "
                       "4 shards x 1 replica"),
            std::string::npos)
      << r.out;
  StartNode(1);
  r = Admin("cluster create-keyspace users");
  EXPECT_EQ(r.code, kExitFailed);  // still desired or already placed
  EXPECT_NE(r.out.find("already exists"), std::string::npos) << r.out;
  for (int i = 0; i < 100; i++) {
    r = Admin("cluster status");
    if (r.out.find("users: id 1, 4 shards") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(r.out.find("users: id 1, 4 shards\n"), std::string::npos) << r.out;
}

TEST_F(KvadminClusterTest, BadInputIsAUsageErrorNeverACrash) {
  EXPECT_EQ(Kvadmin("cluster status").code, kExitUsage);  // no --cluster
  const std::string bad[] = {
      "cluster",
      "cluster frobnicate",
      "cluster status extra",
      "cluster create-keyspace",
      "cluster create-keyspace a b",
      "cluster create-keyspace 'bad name'",
      "cluster create-keyspace " + std::string(58, 'n'),
      "cluster create-keyspace k --shards=0",
      "cluster create-keyspace k --shards=1025",
      "cluster create-keyspace k --replicas=9",
      "cluster create-keyspace k --replicas=-1",
      "cluster create-keyspace k --wait_s=-1",
      "cluster create-keyspace k --shards=many",
  };
  for (const std::string& args : bad) {
    Outcome r = Admin(args);
    EXPECT_EQ(r.code, kExitUsage) << args << ": " << r.out;
  }
  // No backups until replication copies data to them.
  Outcome two = Admin("cluster create-keyspace k --replicas=2");
  EXPECT_EQ(two.code, kExitUsage) << two.out;
  EXPECT_NE(two.out.find("replication is not built yet"), std::string::npos)
      << two.out;
  Outcome r = Kvadmin("--cluster=http://x:1 cluster status");
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_NE(r.out.find("--cluster: "), std::string::npos) << r.out;
  r = Kvadmin("--cluster=" + etcd_.url() +
              " --cluster_name=A/b cluster status");
  EXPECT_EQ(r.code, kExitUsage) << r.out;
  EXPECT_NE(r.out.find("--cluster_name: "), std::string::npos) << r.out;
  // Nothing was written by any of them.
  auto etcd = cluster::EtcdHttp::Open(etcd_.url());
  ASSERT_TRUE(etcd.ok());
  EXPECT_TRUE((*etcd)->GetPrefix("/rpkv/")->kvs.empty());
  // An etcd that is not there: a failure naming it, not a usage error.
  r = Kvadmin("--cluster=etcd://127.0.0.1:1 cluster status");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("is etcd running?"), std::string::npos) << r.out;
  // --help lists the cluster commands.
  r = Kvadmin("--help");
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("cluster status"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster create-keyspace NAME"), std::string::npos);
  EXPECT_NE(r.out.find("--wait_s"), std::string::npos);
}

}  // namespace
}  // namespace kv::kvadmin
