// Shards served by kvserver --cluster and the cluster client
// (docs/cluster.md, "Serving shards", "The client"): real kvservers and a
// real etcd on 127.0.0.1. The map is written by the test (the controller
// creates keyspaces only when asked), so each case controls ownership and
// epochs exactly.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"
#include "etcd_process.h"
#include "kv/client/client.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster_slots.h"
#include "kv/index_format.h"
#include "linearizability.h"
#include "rpkv/rpkv.h"
#include "server_process.h"

namespace kv::e2e {
namespace {

using ClusterShardsTest = ClusterTest;

TEST_F(ClusterShardsTest, KeysGoToTheirShardsOnTheirNodes) {
  StartNodes(2);
  PutMap(UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}));
  for (uint32_t s = 0; s < 4; s++) {
    ASSERT_TRUE(Serving(s % 2 + 1, "users.s" + std::to_string(s), 1));
  }
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::map<std::string, std::string> want;
  for (int i = 0; i < 200; i++) {
    const std::string k = "key" + std::to_string(i);
    want[k] = "v" + std::to_string(i);
    ASSERT_TRUE((*c)->Put(k, want[k]).ok()) << k;
  }
  std::set<uint32_t> shards_used;
  for (const auto& [k, v] : want) {
    std::string got;
    ASSERT_TRUE((*c)->Get(k, &got).ok()) << k;
    EXPECT_EQ(got, v);
    shards_used.insert(ShardOf(k));
  }
  EXPECT_EQ(shards_used.size(), 4u) << "200 keys should touch every shard";
  // Each shard's keys are in its node's pool, and only there.
  for (uint32_t s = 0; s < 4; s++) {
    auto d = Direct(s % 2 + 1, "users.s" + std::to_string(s), 1);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    size_t n = 0;
    ASSERT_TRUE((*d)->Scan("", 0,
                           [&](std::string_view k, std::string_view) {
                             EXPECT_EQ(ShardOf(std::string(k)), s) << k;
                             n++;
                             return true;
                           })
                    .ok());
    size_t expected = 0;
    for (const auto& [k, v] : want) expected += ShardOf(k) == s ? 1 : 0;
    EXPECT_EQ(n, expected) << "shard " << s;
  }
  // Scan through the cluster sees every key once; a batch spans shards.
  size_t scanned = 0;
  ASSERT_TRUE((*c)->Scan("key", 0,
                         [&](std::string_view, std::string_view) {
                           scanned++;
                           return true;
                         })
                  .ok());
  EXPECT_EQ(scanned, want.size());
  Batch b;
  for (int i = 0; i < 64; i++) b.Put("b" + std::to_string(i), "x");
  for (int i = 0; i < 64; i++) b.Get("key" + std::to_string(i));
  b.Delete("key0");
  ASSERT_TRUE((*c)->Execute(&b).ok());
  for (size_t i = 0; i < b.size(); i++) {
    EXPECT_TRUE(b.result(i).status.ok()) << i << b.result(i).status.ToString();
  }
  EXPECT_EQ(b.result(64).value, want["key0"]);
  std::string gone;
  EXPECT_TRUE((*c)->Get("key0", &gone).IsNotFound());
  // Paged scan through the cluster: every live key exactly once.
  std::set<std::string> paged;
  uint64_t cursor = 0;
  int pages = 0;
  do {
    auto next = (*c)->ScanPage(
        cursor, "", 50, [&](std::string_view k, std::string_view) {
          EXPECT_TRUE(paged.insert(std::string(k)).second);
        });
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    cursor = *next;
  } while (cursor != 0 && ++pages < 1000);
  EXPECT_EQ(paged.size(), want.size() - 1 + 64);
}

TEST_F(ClusterShardsTest, ANodeAdmitsOnlyTheShardsItServes) {
  StartNodes(2);
  PutMap(UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(2, "users.s3", 1));
  ASSERT_TRUE(Serving(1, "users.s2", 1));
  // Node 1 does not serve shard 1 (node 2 does), nor any plain keyspace.
  for (const char* name : {"users.s1", "users.s3", "users", "default"}) {
    auto d = Direct(1, name, 1);
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_TRUE(d.status().IsWrongShard()) << d.status().ToString();
  }
  // Nor does it create one for a client.
  ClientOptions o;
  o.server = nodes_[0].address();
  o.keyspace = "fresh";
  o.create_if_missing = true;
  auto d = Client::Connect(o);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsWrongShard()) << d.status().ToString();
}

TEST_F(ClusterShardsTest, AStaleEpochIsRefusedAndTheClusterClientRetries) {
  StartNodes(1);
  PutMap(UsersMap({1, 1, 1, 1}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s0", 1));
  auto cluster_client = Client::Connect(ClusterOptions());
  ASSERT_TRUE(cluster_client.ok()) << cluster_client.status().ToString();
  std::string k0;  // a key of shard 0
  for (int i = 0; k0.empty(); i++) {
    if (ShardOf("k" + std::to_string(i)) == 0) k0 = "k" + std::to_string(i);
  }
  ASSERT_TRUE((*cluster_client)->Put(k0, "before").ok());
  auto direct = Direct(1, "users.s0", 1);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  ASSERT_TRUE((*direct)->Put(k0, "direct").ok());

  PutMap(UsersMap({1, 1, 1, 1}, {2, 1, 1, 1}));  // shard 0's epoch moves
  ASSERT_TRUE(Serving(1, "users.s0", 2));
  // The old connection's requests carry epoch 1: refused, not applied.
  Status st = (*direct)->Put(k0, "stale");
  EXPECT_TRUE(st.IsWrongShard()) << st.ToString();
  EXPECT_NE(st.message().find("epoch 2"), std::string::npos) << st.message();
  // The cluster client re-reads the map and goes on.
  ASSERT_TRUE((*cluster_client)->Put(k0, "after").ok());
  std::string v;
  ASSERT_TRUE((*cluster_client)->Get(k0, &v).ok());
  EXPECT_EQ(v, "after");
}

TEST_F(ClusterShardsTest, AGarbageMapIsIgnoredAndTheLastGoodOneStays) {
  StartNodes(1);
  PutMap(UsersMap({1, 1, 1, 1}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s3", 1));
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const char* garbage :
       {"{", "[]", R"({"format": 1, "slots": 1024, "keyspaces": [{}]})",
        R"({"format": 1, "slots": 1024, "keyspaces": [{"name": "users", )"
        R"("id": 7, "shards": [{"id": 0, "epoch": 1, "replicas": [1], )"
        R"("slots": [[0, 1000]]}]}]})"}) {
    PutMap(garbage);
  }
  EXPECT_TRUE(nodes_[0].WaitForLog("is not valid (the last good one stays)"));
  // Still served, by the last good map.
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE((*c)->Put("g" + std::to_string(i), "v").ok());
  }
  // A new client cannot start from a garbage map.
  auto fresh = Client::Connect(ClusterOptions());
  EXPECT_FALSE(fresh.ok());
}

TEST_F(ClusterShardsTest, AStoppedNodeAcknowledgesNothingAfterItsDeadline) {
  StartNodes(1);
  PutMap(UsersMap({1, 1, 1, 1}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s0", 1));
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Two keys of one shard: the second put goes out on the connection the
  // first made, so its COMMIT waits in the stopped node's socket.
  std::string before, during;
  for (int i = 0; during.empty(); i++) {
    const std::string k = "s" + std::to_string(i);
    if (ShardOf(k) != 0) continue;
    (before.empty() ? before : during) = k;
  }
  ASSERT_TRUE((*c)->Put(before, "1").ok());
  ASSERT_EQ(kill(nodes_[0].pid(), SIGSTOP), 0);
  // A put sent while the node is stopped; it stays stopped past its
  // lease (TTL 2 s), so etcd expires the registration.
  Status put;
  std::thread writer([&] { put = (*c)->Put(during, "2"); });
  std::this_thread::sleep_for(milliseconds(3500));
  auto reg = etcd_client_->Get("/rpkv/t/nodes/1");
  ASSERT_TRUE(reg.ok());
  EXPECT_TRUE(reg->kvs.empty()) << "the lease should have expired";
  ASSERT_EQ(kill(nodes_[0].pid(), SIGCONT), 0);
  writer.join();
  // Whatever the node did with the COMMIT after waking, it did not
  // acknowledge it: the deadline had passed.
  EXPECT_FALSE(put.ok());
  EXPECT_EQ(nodes_[0].Wait(seconds(10)), 3) << nodes_[0].StderrText();
  EXPECT_NE(nodes_[0].StderrText().find("fenced"), std::string::npos);
}

// A node killed and restarted under a cluster client: the client's
// connection to it is dead. A get changes nothing, so the router connects
// again and retries it; so is a put whose COMMIT never left (the shard's
// client found the connection dead first: it was not applied); a put
// whose COMMIT left has an unknown outcome, so it is reported
// (unavailable), not retried.
TEST_F(ClusterShardsTest, OnABrokenConnectionOnlyAWriteThatLeftIsNotRetried) {
  StartNodes(1);
  PutMap(UsersMap({1, 1, 1, 1}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s0", 1));
  ClientOptions o = ClusterOptions();
  o.op_timeout = seconds(15);
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->Put("k", "v").ok());
  // Kills node 1, waits for its lease to go (a restart with the same id
  // is refused before), starts it again on the same pool and port.
  auto restart = [&] {
    nodes_[0].Kill9();
    for (int i = 0; i < 100; i++) {
      auto reg = etcd_client_->Get("/rpkv/t/nodes/1");
      if (reg.ok() && reg->kvs.empty()) break;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ASSERT_TRUE(nodes_[0].Restart().ok()) << nodes_[0].StderrText();
  };
  restart();
  std::string v;
  Status st = (*c)->Get("k", &v);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(v, "v");
  // A put on a connection the node's death broke: the shard's client
  // finds it dead before the COMMIT leaves (the first poll after a pause,
  // or the failed post), so the write was not applied and the router
  // sends it again on a new connection.
  restart();
  st = (*c)->Put("k", "t");
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE((*c)->Get("k", &v).ok());
  EXPECT_EQ(v, "t");
  // A put whose COMMIT left before the node died: its outcome is
  // unknown, so it is reported, not retried.
  ASSERT_TRUE((*c)->Put("k", "u").ok());  // connected, with a grant
  ASSERT_EQ(kill(nodes_[0].pid(), SIGSTOP), 0);
  std::thread writer([&] { st = (*c)->Put("k", "w"); });
  std::this_thread::sleep_for(milliseconds(300));  // in the node's socket
  restart();  // kill -9 of the stopped process, then a new one
  writer.join();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("may or may not have been applied"),
            std::string::npos)
      << st.ToString();
  // The next put connects again.
  ASSERT_TRUE((*c)->Put("k", "x").ok());
  ASSERT_TRUE((*c)->Get("k", &v).ok());
  EXPECT_EQ(v, "x");
}

// Eight cluster clients run puts, deletes and gets on 32 keys over three
// nodes while the map moves two shards' epochs (their requests are
// refused with wrong_shard and retried); every op succeeds and the
// history is linearizable.
TEST_F(ClusterShardsTest, EightClientsOnThreeNodesAreLinearizable) {
  StartNodes(3);
  PutMap(UsersMap({1, 2, 3, 1}, {1, 1, 1, 1}));
  for (uint32_t s = 0; s < 4; s++) {
    ASSERT_TRUE(Serving(s == 3 ? 1 : s + 1, "users.s" + std::to_string(s), 1));
  }
  constexpr int kClients = 8, kKeys = 32, kOps = 150;
  std::mutex mu;
  std::vector<HistoryOp> history;
  std::atomic<int> errors{0}, done{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kClients; w++) {
    threads.emplace_back([&, w] {
      auto c = Client::Connect(ClusterOptions());
      if (!c.ok()) {
        errors++;
        ADD_FAILURE() << c.status().ToString();
        return;
      }
      std::vector<HistoryOp> mine = RandomOps(
          **c, w, kKeys, kOps, [] { return true; }, &errors);
      done++;
      std::lock_guard<std::mutex> lock(mu);
      history.insert(history.end(), mine.begin(), mine.end());
    });
  }
  // Mid-run, shards 0 and 2 change epoch (same primaries).
  std::this_thread::sleep_for(milliseconds(300));
  PutMap(UsersMap({1, 2, 3, 1}, {2, 1, 2, 1}));
  for (auto& t : threads) t.join();
  EXPECT_TRUE(nodes_[0].WaitForLog("serving shard 'users.s0' at epoch 2"));
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(history.size(), size_t{kClients * kOps});
  EXPECT_EQ(NonLinearizableKeys(history), std::vector<std::string>{});
}

// etcd restarted under load: the data path does not need it (clients
// and nodes hold the map), so puts and gets go on; nodes keep their
// leases across a restart shorter than the deadline margin allows.
TEST_F(ClusterShardsTest, TheDataPathKeepsWorkingWhileEtcdRestarts) {
  StartNodes(2, /*lease_ttl_s=*/6);
  PutMap(UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(2, "users.s3", 1));
  ASSERT_TRUE(Serving(1, "users.s2", 1));
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Connect to every shard first (connecting needs the node registry).
  for (int i = 0; i < 64; i++) {
    ASSERT_TRUE((*c)->Put("warm" + std::to_string(i), "x").ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::thread load([&] {
    for (int i = 0; !stop.load(); i++) {
      const std::string k = "warm" + std::to_string(i % 64);
      std::string v;
      Status st = (*c)->Put(k, std::to_string(i));
      if (st.ok()) st = (*c)->Get(k, &v);
      (st.ok() && v == std::to_string(i) ? ok : failed)++;
    }
  });
  std::this_thread::sleep_for(milliseconds(200));
  const int before = ok.load();
  etcd_.Stop();
  std::this_thread::sleep_for(milliseconds(800));
  const int during = ok.load() - before;
  ASSERT_TRUE(etcd_.Start().ok());
  std::this_thread::sleep_for(milliseconds(300));
  stop = true;
  load.join();
  EXPECT_GT(during, 0) << "no put+get completed while etcd was down";
  EXPECT_EQ(failed.load(), 0);
  // The nodes are still members (their leases survived).
  EXPECT_TRUE(nodes_[0].running());
  EXPECT_TRUE(nodes_[1].running());
  EXPECT_EQ(nodes_[0].StderrText().find("fenced"), std::string::npos)
      << nodes_[0].StderrText();
}

// The command's stdout; *rc gets its exit code.
std::string RunCommand(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// kvcli --cluster, kvbench --cluster and rpkv_connect("etcd://...") reach
// the same keys through the cluster.
TEST_F(ClusterShardsTest, ToolsAndTheCApiTakeAClusterAddress) {
  StartNodes(2);
  PutMap(UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(2, "users.s3", 1));
  ASSERT_TRUE(Serving(1, "users.s2", 1));
  const std::string script = (dir_ / "script.txt").string();
  {
    std::ofstream f(script);
    for (int i = 0; i < 20; i++) f << "put k" << i << " v" << i << "\n";
    f << "get k7\nget k13\n";
  }
  int rc = 0;
  std::string out =
      RunCommand(std::string(KV_E2E_KVCLI_PATH) + " --cluster=" + etcd_.url() +
                     " --cluster_name=t --keyspace=users < " + script + " 2>&1",
                 &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("v7\nv13\n"), std::string::npos) << out;
  // A keyspace the cluster does not have: a clear error, exit code 3.
  out =
      RunCommand(std::string(KV_E2E_KVCLI_PATH) + " --cluster=" + etcd_.url() +
                     " --cluster_name=t --keyspace=nope " + "get k1 2>&1",
                 &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("'nope' is not in cluster 't'"), std::string::npos) << out;

  // The C API: etcd:// names the cluster (its default name, rpkv, is not
  // this test's, so the connect reports the missing map).
  rpkv* db = nullptr;
  EXPECT_EQ(rpkv_connect(etcd_.url().c_str(), "users", nullptr, &db),
            RPKV_NOT_FOUND);
  EXPECT_NE(std::string(rpkv_errmsg(nullptr)).find("has no map yet"),
            std::string::npos)
      << rpkv_errmsg(nullptr);
  ASSERT_TRUE(
      etcd_client_->Put("/rpkv/rpkv/map", UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}))
          .ok());
  // Cluster "rpkv" has the same map but no registered nodes: the nodes
  // are members of "t". Connect works (the map is there); a get of a key
  // cannot reach its shard's node.
  rpkv_options opts;
  rpkv_options_init(&opts);
  opts.op_timeout_ms = 1000;  // the get retries until then
  ASSERT_EQ(rpkv_connect(etcd_.url().c_str(), "users", &opts, &db), RPKV_OK)
      << rpkv_errmsg(nullptr);
  void* v = nullptr;
  size_t n = 0;
  EXPECT_EQ(rpkv_get(db, "k7", 2, &v, &n), RPKV_E_UNAVAILABLE);
  EXPECT_NE(std::string(rpkv_errmsg(db)).find("is not registered"),
            std::string::npos)
      << rpkv_errmsg(db);
  rpkv_close(db);

  // kvbench through the cluster.
  out = RunCommand(std::string(KV_E2E_KVBENCH_PATH) +
                       " --cluster=" + etcd_.url() +
                       " --cluster_name=t --keyspace=users --keys=500 "
                       "--workload=b --duration=0.5 --warmup=0 "
                       "--progress=false 2>&1",
                   &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ops/s"), std::string::npos) << out;
}

// A shard at epoch 2 had another primary before: a node whose pool lacks
// it does not serve it empty (that would answer not_found for keys that
// exist); a shard at epoch 1 is new and is created.
TEST_F(ClusterShardsTest, AShardThatMovedHereWithoutItsDataIsNotServedEmpty) {
  StartNodes(1);
  PutMap(UsersMap({1, 1, 1, 1}, {1, 2, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s0", 1));
  EXPECT_TRUE(nodes_[0].WaitForLog(
      "shard 'users.s1' (id 7169) given to this node at map revision"));
  EXPECT_NE(nodes_[0].StderrText().find("so it is not served empty"),
            std::string::npos)
      << nodes_[0].StderrText();
  auto d = Direct(1, "users.s1", 2);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.status().IsWrongShard()) << d.status().ToString();
}

}  // namespace
}  // namespace kv::e2e
