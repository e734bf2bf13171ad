// The fixture of the cluster end-to-end tests: a real etcd on 127.0.0.1,
// kvserver --cluster nodes (cluster "t", a shared peer key), and keyspace
// "users" (id 7) in four shards of 256 slots whose map the test writes.
#ifndef KV_TESTS_E2E_CLUSTER_FIXTURE_H_
#define KV_TESTS_E2E_CLUSTER_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "etcd_process.h"
#include "kv/client/client.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster_slots.h"
#include "kv/index_format.h"
#include "linearizability.h"
#include "server_process.h"

namespace kv::e2e {

namespace fs = std::filesystem;
using cluster::testing::EtcdProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

// How many failed ops of a RandomOps run (all clients) are reported.
inline constexpr int kReportedErrors = 8;

// One client's share of a linearizability run: random ops on keys
// key0..key<keys-1> (40% put, 10% delete, 50% get), at least `min_ops`
// and on until `stop` says so; each op ok (recorded with its call and
// return times) or counted in *errors; the first kReportedErrors of all
// clients are also reported as failures (the rest only counted, so that
// a failed run's output keeps room for the node logs that explain it).
inline std::vector<HistoryOp> RandomOps(Client& c, int client, int keys,
                                        int min_ops,
                                        const std::function<bool()>& stop,
                                        std::atomic<int>* errors) {
  std::mt19937 rng(client);
  std::vector<HistoryOp> mine;
  for (int n = 0; n < min_ops || !stop(); n++) {
    HistoryOp op;
    op.key = "key" + std::to_string(rng() % keys);
    const int dice = static_cast<int>(rng() % 10);
    op.call = NowNs();
    Status st;
    if (dice < 4) {
      op.kind = HistoryOp::kPut;
      op.value = "w" + std::to_string(client) + "n" + std::to_string(n);
      st = c.Put(op.key, op.value);
    } else if (dice < 5) {
      op.kind = HistoryOp::kDelete;
      st = c.Delete(op.key);
    } else {
      op.kind = HistoryOp::kGet;
      st = c.Get(op.key, &op.value);
      op.found = st.ok();
      if (st.IsNotFound()) st = Status::Ok();
    }
    op.ret = NowNs();
    if (!st.ok()) {
      if ((*errors)++ < kReportedErrors) {
        static const char* const kKinds[] = {"put", "delete", "get"};
        ADD_FAILURE() << "client " << client << ": "
                      << kKinds[op.kind == HistoryOp::kPut      ? 0
                                : op.kind == HistoryOp::kDelete ? 1
                                                                : 2]
                      << " " << op.key << ": " << st.ToString();
      }
      continue;
    }
    mine.push_back(std::move(op));
  }
  return mine;
}

// Keyspace "users" (id 7) in four shards of 256 slots; shard i's primary
// is owners[i] and its epoch epochs[i].
inline std::string UsersMap(const std::vector<uint32_t>& owners,
                            const std::vector<uint32_t>& epochs) {
  std::string json =
      R"({"format": 1, "slots": 1024, "keyspaces": [{"name": "users", )"
      R"("id": 7, "shards": [)";
  for (uint32_t i = 0; i < 4; i++) {
    if (i != 0) json += ",";
    json += R"({"id": )" + std::to_string(i) + R"(, "epoch": )" +
            std::to_string(epochs[i]) + R"(, "replicas": [)" +
            std::to_string(owners[i]) + R"(], "slots": [[)" +
            std::to_string(i * 256) + ", " + std::to_string(i * 256 + 255) +
            "]]}";
  }
  return json + "]}]}";
}

inline uint32_t ShardOf(const std::string& key) {
  return SlotOf(index_format::HashKey(key)) / 256;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string missing = cluster::testing::EtcdBinaryMissing();
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(etcd_.Start().ok());
    auto c = cluster::EtcdHttp::Open(etcd_.url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    etcd_client_ = std::move(c).value();
    dir_ = fs::temp_directory_path() /
           ("rpkv-cluster-shards-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    peer_key_ = (dir_ / "peer.key").string();
    std::ofstream(peer_key_) << "cluster-peer-key-0123456789\n";
    fs::permissions(peer_key_, fs::perms::owner_read | fs::perms::owner_write);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // After a failed test: every node's log on stderr, then, last (where
  // a cut output still shows it), each node's lines about its lease, a
  // fence, an exit or a sanitizer report.
  void DumpNodeLogsIfFailed() {
    if (!HasFailure()) return;
    std::string logs[4];
    for (int i = 0; i < 4; i++) {
      logs[i] = nodes_[i].StderrText();
      if (logs[i].empty()) continue;
      fprintf(stderr, "---- node %d ----\n%s\n", i + 1, logs[i].c_str());
    }
    for (int i = 0; i < 4; i++) {
      if (logs[i].empty()) continue;
      fprintf(stderr, "---- node %d: lease, fence, exit ----\n", i + 1);
      std::istringstream lines(logs[i]);
      for (std::string line; std::getline(lines, line);) {
        for (const char* word : {" lease", "fence", "exit", "Sanitizer"}) {
          if (line.find(word) != std::string::npos) {
            fprintf(stderr, "%s\n", line.c_str());
            break;
          }
        }
      }
    }
  }

  // Starts nodes 1..n.
  void StartNodes(int n, int lease_ttl_s = 2) {
    for (int i = 0; i < n; i++) {
      StartNode(static_cast<uint32_t>(i + 1), lease_ttl_s);
    }
  }
  // Starts node `id` (1..4); `rebalance`: its controller's --rebalance
  // (off unless a test is about it, so that the maps tests write stay
  // as written).
  // `etcd`: the address the node reaches etcd at (a proxy the test can
  // cut); empty: etcd's own. `extra`: more flags (e.g. --listen and
  // --advertise, to put a proxy in front of the node).
  // The pool is 256 MiB: a node that holds four shards gives each about
  // 30 segments of 1 MiB, so some 15 grantable (--grant_share_percent
  // 50), enough for the eight writers of a load and the sessions a
  // partition leaves behind (at 128 MiB, 7: the eighth writer of a shard
  // was refused until its op timeout).
  void StartNode(uint32_t id, int lease_ttl_s = 2, bool rebalance = false,
                 const std::string& etcd = "",
                 const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = {
        "--pool=" + (dir_ / ("n" + std::to_string(id))).string(),
        "--pool_size=256M",
        "--segment_size=1M",
        "--cluster=" + (etcd.empty() ? etcd_.url() : etcd),
        "--node_id=" + std::to_string(id),
        "--cluster_name=t",
        "--lease_ttl_s=" + std::to_string(lease_ttl_s),
        "--peer_key_file=" + peer_key_,
        std::string("--rebalance=") + (rebalance ? "true" : "false")};
    flags.insert(flags.end(), extra.begin(), extra.end());
    ASSERT_TRUE(nodes_[id - 1].Start(flags).ok())
        << nodes_[id - 1].StderrText();
  }
  void PutMap(const std::string& json) {
    ASSERT_TRUE(etcd_client_->Put("/rpkv/t/map", json).ok());
  }
  // Waits until node `id` logs that it serves `shard` at `epoch`.
  bool Serving(uint32_t id, const std::string& shard, uint32_t epoch) {
    return nodes_[id - 1].WaitForLog("serving shard '" + shard + "' at epoch " +
                                     std::to_string(epoch));
  }
  ClientOptions ClusterOptions() {
    ClientOptions o;
    o.cluster = etcd_.url();
    o.cluster_name = "t";
    o.keyspace = "users";
    o.op_timeout = seconds(3);
    return o;
  }
  // A single-server client of one shard, as the router makes them.
  Result<std::unique_ptr<Client>> Direct(uint32_t node,
                                         const std::string& shard,
                                         uint32_t epoch) {
    ClientOptions o;
    o.server = nodes_[node - 1].address();
    o.keyspace = shard;
    o.map_epoch = epoch;
    o.op_timeout = seconds(3);
    return Client::Connect(o);
  }

  EtcdProcess etcd_;
  std::unique_ptr<cluster::EtcdHttp> etcd_client_;
  fs::path dir_;
  std::string peer_key_;
  ServerProcess nodes_[4];
};

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_CLUSTER_FIXTURE_H_
