// kvadmin's cluster commands end to end: the real kvadmin binary against
// a real etcd (cluster/tests/etcd_process.h) and real kvserver --cluster
// processes (tests/e2e/server_process.h) on 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
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
    Status st = node->Start(
        {"--pool=" + dir_ + "/n" + std::to_string(id), "--pool_size=64M",
         "--cluster=" + etcd_.url(), "--node_id=" + std::to_string(id),
         "--cluster_name=t", "--lease_ttl_s=2", "--rebalance=false"});
    EXPECT_TRUE(st.ok()) << st.ToString() << node->StderrText();
    nodes_.push_back(std::move(node));
    return *nodes_.back();
  }

  // kvadmin with --cluster and --cluster_name=t, then `args`.
  Outcome Admin(const std::string& args) {
    return Kvadmin("--cluster=" + etcd_.url() + " --cluster_name=t " + args);
  }

  // Runs `cluster status` every 100 ms until its output holds `part`
  // (at most 10 s); returns the last output.
  std::string StatusUntil(const std::string& part,
                          const std::string& flags = "") {
    Outcome r;
    for (int i = 0; i < 100; i++) {
      r = Admin("cluster status " + flags);
      if (r.out.find(part) != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r.out;
  }
  // Runs `cluster status` until it lists no move (at most 10 s); returns
  // the last output.
  std::string StatusWithoutMoves() {
    Outcome r;
    for (int i = 0; i < 100; i++) {
      r = Admin("cluster status");
      if (r.out.find("moves:") == std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return r.out;
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
  Outcome r = Admin("cluster create-keyspace users --shards=2 --replicas=1");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  r = Admin("cluster create-keyspace users --shards=2 --replicas=1");
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
                       "4 shards x 2 replicas"),
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
      "cluster move users 0",
      "cluster move users --to=1",
      "cluster move users x --to=1",
      "cluster move users 01 --to=1",
      "cluster move users 1024 --to=1",
      "cluster move 'bad name' 0 --to=1",
      "cluster move users 0 --to=0",
      "cluster move users 0 --to=x",
      "cluster move users 0 1 --to=1",
      "cluster move-pause users",
      "cluster move-resume users -1",
      "cluster move-rate users 0",
      "cluster move-rate users 0 fast",
      "cluster move-cancel users",
      "cluster drain",
      "cluster drain x",
      "cluster drain 0",
      "cluster undrain 1 2",
      "cluster status --format=xml",
  };
  for (const std::string& args : bad) {
    Outcome r = Admin(args);
    EXPECT_EQ(r.code, kExitUsage) << args << ": " << r.out;
  }
  Outcome nine = Admin("cluster create-keyspace k --replicas=9");
  EXPECT_NE(nine.out.find("--replicas must be at most 8"), std::string::npos)
      << nine.out;
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
  EXPECT_NE(r.out.find("cluster move KEYSPACE SHARD --to=NODE"),
            std::string::npos);
  EXPECT_NE(r.out.find("cluster drain|undrain NODE"), std::string::npos);
}

TEST_F(KvadminClusterTest, MoveCommandsWriteTheRecordAndStatusShowsIt) {
  StartNode(1);
  StartNode(2);
  Outcome r = Admin("cluster create-keyspace users --shards=2 --replicas=1");
  ASSERT_EQ(r.code, kExitOk) << r.out;  // shard 0 on node 1, 1 on node 2
  r = Admin("cluster move users 0 --to=2");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("moving users/0 from node 1 to node 2 (epoch 1)"),
            std::string::npos)
      << r.out;
  r = Admin("cluster status");
  EXPECT_NE(r.out.find("moves: 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("users/0  1 -> 2  copy   no      none  -"),
            std::string::npos)
      << r.out;
  // Refusals, each with its reason and exit 1.
  const std::pair<std::string, std::string> refused[] = {
      {"cluster move users 0 --to=2", "a move of users/0 exists already"},
      {"cluster move nope 0 --to=1", "the cluster map has no keyspace 'nope'"},
      {"cluster move users 5 --to=1", "keyspace 'users' has no shard 5"},
      {"cluster move users 1 --to=7", "node 7 is not a live node"},
      {"cluster move users 1 --to=2", "node 2 is the primary of users/1"},
      {"cluster move-pause users 1", "there is no move of users/1"},
      {"cluster drain 9", "node 9 is neither registered nor named"},
  };
  for (const auto& [args, says] : refused) {
    r = Admin(args);
    EXPECT_EQ(r.code, kExitFailed) << args << ": " << r.out;
    EXPECT_NE(r.out.find(says), std::string::npos) << args << ": " << r.out;
  }
  ASSERT_EQ(Admin("cluster move-pause users 0").code, kExitOk);
  r = Admin("cluster move-rate users 0 10M");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("copies at most 10.0 MiB/s"), std::string::npos)
      << r.out;
  r = Admin("cluster status --format=json");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["moves"].size(), 1u) << r.out;
  EXPECT_EQ(j["moves"][0]["paused"], true);
  EXPECT_EQ(j["moves"][0]["rate_bytes_per_s"], 10 << 20);
  EXPECT_EQ(j["moves"][0]["phase"], "copy");
  EXPECT_EQ(j["keyspaces"][0]["name"], "users");
  ASSERT_EQ(Admin("cluster move-resume users 0").code, kExitOk);
  r = Admin("cluster move-cancel users 0");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  // The source tears the move down and deletes the record (its nodes
  // have no peer key here, so it never copied).
  const std::string gone = StatusWithoutMoves();
  EXPECT_EQ(gone.find("moves:"), std::string::npos) << gone;
  r = Admin("cluster move-cancel users 0");
  EXPECT_EQ(r.code, kExitFailed) << r.out;
  EXPECT_NE(r.out.find("there is no move of users/0"), std::string::npos)
      << r.out;
}

TEST_F(KvadminClusterTest, TheControllerCancelsAMoveWhoseTargetLeft) {
  ServerProcess& one = StartNode(1);
  StartNode(2);
  ServerProcess& three = StartNode(3);
  ASSERT_EQ(Admin("cluster create-keyspace users --shards=2 --replicas=1").code,
            kExitOk);
  Outcome r = Admin("cluster move users 0 --to=3");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_EQ(three.Stop(), 0);  // leaves: its registration goes at once
  // The controller cancels; the source (node 1) tears down, deletes the
  // record and serves the shard on.
  EXPECT_TRUE(one.WaitForLog("target node 3 is not live")) << one.StderrText();
  const std::string out = StatusWithoutMoves();
  EXPECT_EQ(out.find("moves:"), std::string::npos) << out;
}

TEST_F(KvadminClusterTest, DrainMakesTheControllerStartMoves) {
  StartNode(1);
  StartNode(2);
  ASSERT_EQ(Admin("cluster create-keyspace users --shards=4 --replicas=1").code,
            kExitOk);
  Outcome r = Admin("cluster drain 1");
  ASSERT_EQ(r.code, kExitOk) << r.out;
  EXPECT_NE(r.out.find("node 1 drains: the controller moves its 2 shards"),
            std::string::npos)
      << r.out;
  // kvserver's controller keeps one move in flight (max_moves 1).
  std::string out = StatusUntil("users/0  1 -> 2  copy");
  EXPECT_NE(out.find("moves: 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("users/0  1 -> 2  copy"), std::string::npos) << out;
  EXPECT_NE(out.find("draining: 1\n  node 1: 2 shards left"), std::string::npos)
      << out;
  r = Admin("cluster status --format=json");
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["draining"][0]["node"], 1);
  EXPECT_EQ(j["draining"][0]["primaries_left"], 2);
  EXPECT_EQ(j["moves"].size(), 1u);
  // Draining twice changes nothing; undrain leaves the started move.
  r = Admin("cluster drain 1");
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_NE(r.out.find("draining already"), std::string::npos) << r.out;
  ASSERT_EQ(Admin("cluster undrain 1").code, kExitOk);
  out = Admin("cluster status").out;
  EXPECT_EQ(out.find("draining:"), std::string::npos) << out;
  EXPECT_NE(out.find("users/0  1 -> 2  copy"), std::string::npos) << out;
}

}  // namespace
}  // namespace kv::kvadmin
