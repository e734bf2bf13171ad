// kvserver --cluster (server/src/cluster_node.h, docs/cluster.md): real
// kvserver processes and a real etcd on 127.0.0.1. A node registers on its
// lease and stands for controller; a second node with its id is refused;
// SIGTERM removes the registration at once, kill -9 when the lease
// expires; a node whose etcd stops answering fences itself and exits 3.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "etcd_process.h"
#include "kv/cluster/etcd_http.h"
#include "server_process.h"

namespace kv::e2e {
namespace {

namespace fs = std::filesystem;
using cluster::testing::EtcdProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

class ClusterNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = cluster::testing::EtcdBinaryMissing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(etcd_.Start().ok());
    auto c = cluster::EtcdHttp::Open(etcd_.url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c).value();
    dir_ = fs::temp_directory_path() /
           ("rpkv-cluster-node-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> NodeFlags(uint32_t id, const std::string& pool) {
    return {"--pool=" + (dir_ / pool).string(),
            "--pool_size=64M",
            "--cluster=" + etcd_.url(),
            "--node_id=" + std::to_string(id),
            "--cluster_name=t",
            "--lease_ttl_s=2",
            "--rebalance=false"};
  }
  // The value of key under /rpkv/t/, or "" when absent.
  std::string Key(const std::string& key) {
    auto r = client_->Get("/rpkv/t/" + key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && !r->kvs.empty() ? r->kvs[0].value : "";
  }
  // Waits (bounded) until /rpkv/t/key is absent; the time it took.
  milliseconds WaitGone(const std::string& key, milliseconds bound) {
    const auto t0 = std::chrono::steady_clock::now();
    while (!Key(key).empty() && std::chrono::steady_clock::now() - t0 < bound) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return std::chrono::duration_cast<milliseconds>(
        std::chrono::steady_clock::now() - t0);
  }

  EtcdProcess etcd_;
  std::unique_ptr<cluster::EtcdHttp> client_;
  fs::path dir_;
};

TEST_F(ClusterNodeTest, ANodeRegistersStandsForControllerAndLeavesOnSigterm) {
  ServerProcess node;
  ASSERT_TRUE(node.Start(NodeFlags(1, "a.pool")).ok()) << node.StderrText();
  const std::string reg = Key("nodes/1");
  EXPECT_NE(reg.find("\"address\":\"" + node.address() + "\""),
            std::string::npos)
      << reg;
  EXPECT_TRUE(node.WaitForLog("joined cluster 't' as node 1"));
  // The only candidate becomes the controller (bounded wait).
  for (int i = 0; i < 100 && Key("controller").empty(); i++) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Key("controller"), "1");
  EXPECT_EQ(node.Stop(), 0);
  // Left: the lease is revoked, not left to expire.
  EXPECT_TRUE(Key("nodes/1").empty());
  EXPECT_TRUE(Key("controller").empty());
}

TEST_F(ClusterNodeTest, ASecondNodeWithTheSameIdIsRefused) {
  ServerProcess first, second;
  ASSERT_TRUE(first.Start(NodeFlags(1, "a.pool")).ok()) << first.StderrText();
  Status st = second.Start(NodeFlags(1, "b.pool"));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exited with 3"), std::string::npos)
      << st.ToString();
  EXPECT_NE(second.StderrText().find("node id 1 is already registered by a "
                                     "live node at " +
                                     first.address()),
            std::string::npos)
      << second.StderrText();
  // The first is untouched.
  EXPECT_NE(Key("nodes/1").find(first.address()), std::string::npos);
}

TEST_F(ClusterNodeTest, AKilledNodesRegistrationGoesWithItsLease) {
  ServerProcess node;
  ASSERT_TRUE(node.Start(NodeFlags(2, "a.pool")).ok()) << node.StderrText();
  ASSERT_FALSE(Key("nodes/2").empty());
  node.Kill9();
  ASSERT_FALSE(Key("nodes/2").empty());  // until the lease expires
  const milliseconds took = WaitGone("nodes/2", seconds(10));
  EXPECT_LT(took, seconds(4)) << "TTL is 2 s";
  EXPECT_TRUE(Key("nodes/2").empty());
}

TEST_F(ClusterNodeTest, ANodeThatCannotRenewItsLeaseFencesAndExits) {
  ServerProcess node;
  ASSERT_TRUE(node.Start(NodeFlags(3, "a.pool")).ok()) << node.StderrText();
  etcd_.Pause();  // etcd stops answering: no keepalive succeeds
  // Deadline: last keepalive's send time + 2 s - 0.5 s margin; the exit
  // then waits for etcd calls in flight (bounded by their 5 s timeout).
  EXPECT_TRUE(
      node.WaitForLog("fenced: the cluster lease was not renewed", seconds(4)))
      << node.StderrText();
  EXPECT_EQ(node.Wait(seconds(10)), 3) << node.StderrText();
  EXPECT_NE(node.StderrText().find("stopped: fenced"), std::string::npos);
  etcd_.Resume();
}

TEST_F(ClusterNodeTest, ClusterFlagsAreCheckedAtStart) {
  ServerProcess node;
  for (auto flags : {std::vector<std::string>{"--cluster=etcd://127.0.0.1:1"},
                     std::vector<std::string>{"--node_id=3"},
                     std::vector<std::string>{"--lease_ttl_s=1"}}) {
    flags.push_back("--pool=" + (dir_ / "x.pool").string());
    Status st = node.Start(flags);
    EXPECT_NE(st.message().find("exited with 2"), std::string::npos)
        << st.ToString();
  }
  // --max_moves outside 1..64 is a usage error that names the range.
  for (const char* moves : {"--max_moves=0", "--max_moves=65"}) {
    std::vector<std::string> flags = NodeFlags(5, "z.pool");
    flags.push_back(moves);
    Status st = node.Start(flags);
    EXPECT_NE(st.message().find("exited with 2"), std::string::npos)
        << moves << ": " << st.ToString();
    EXPECT_NE(node.StderrText().find("--max_moves must be 1..64"),
              std::string::npos)
        << node.StderrText();
  }
  // An etcd nobody runs: a runtime failure that names it.
  std::vector<std::string> flags = NodeFlags(4, "y.pool");
  flags[2] = "--cluster=etcd://127.0.0.1:" +
             std::to_string(cluster::testing::PickFreePort());
  Status st = node.Start(flags);
  EXPECT_NE(st.message().find("exited with 3"), std::string::npos)
      << st.ToString();
  EXPECT_NE(node.StderrText().find("is etcd running?"), std::string::npos)
      << node.StderrText();
}

}  // namespace
}  // namespace kv::e2e
