// Replication and failover (docs/replication.md): real etcd, real kvserver
// nodes, the cluster client. Keyspace "users" in four shards, each on a
// primary and one backup; every acknowledged write must survive the
// primary's kill -9, and a backup's death must cost the writes a pause,
// not an error.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"
#include "kv/client/client.h"
#include "kv/cluster/cluster_map.h"
#include "linearizability.h"
#include "tcp_proxy.h"

namespace kv::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// Keyspace "users" (id 7), four shards of 256 slots; shard i's replica
// set is sets[i] (primary first), epoch 1.
std::string ReplicatedMap(const std::vector<std::vector<uint32_t>>& sets) {
  std::string json =
      R"({"format": 1, "slots": 1024, "keyspaces": [{"name": "users", )"
      R"("id": 7, "shards": [)";
  for (uint32_t i = 0; i < 4; i++) {
    if (i != 0) json += ",";
    json += R"({"id": )" + std::to_string(i) + R"(, "epoch": 1, "replicas": [)";
    for (size_t r = 0; r < sets[i].size(); r++) {
      json += (r ? "," : "") + std::to_string(sets[i][r]);
    }
    json += R"(], "slots": [[)" + std::to_string(i * 256) + ", " +
            std::to_string(i * 256 + 255) + "]]}";
  }
  return json + "]}]}";
}

class ClusterReplicationTest : public ClusterTest {
 protected:
  void TearDown() override {
    stop_ = true;
    for (auto& t : load_) t.join();
    DumpNodeLogsIfFailed();
    ClusterTest::TearDown();
  }

  // Nodes 1..n up, every shard on `sets`, served and backed up.
  void StartReplicated(int n, const std::vector<std::vector<uint32_t>>& sets) {
    StartNodes(n);
    WaitReplicated(sets);
  }
  // The map puts every shard on `sets`; waits until they are served and
  // backed up.
  void WaitReplicated(const std::vector<std::vector<uint32_t>>& sets) {
    PutMap(ReplicatedMap(sets));
    for (uint32_t i = 0; i < 4; i++) {
      const std::string shard = "users.s" + std::to_string(i);
      ASSERT_TRUE(Serving(sets[i][0], shard, 1)) << shard;
      for (size_t r = 1; r < sets[i].size(); r++) {
        ASSERT_TRUE(nodes_[sets[i][r] - 1].WaitForLog("backup of shard '" +
                                                      shard + "' at epoch 1"))
            << shard << " on node " << sets[i][r];
      }
    }
  }

  std::unique_ptr<Client> Connect() {
    ClientOptions o = ClusterOptions();
    o.op_timeout = load_timeout_;
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Eight clients of random puts, deletes and gets on 48 keys until
  // StopLoad. A write refused as unavailable has an unknown outcome (the
  // node died under it): recorded as such, not a failure.
  void StartLoad() {
    history_.resize(8);
    for (int t = 0; t < 8; t++) {
      load_.emplace_back([this, t] {
        std::unique_ptr<Client> c = Connect();
        if (c == nullptr) return;
        std::mt19937 rng(t);
        for (int n = 0; !stop_; n++) {
          HistoryOp op;
          op.key = "key" + std::to_string(rng() % 48);
          const int dice = static_cast<int>(rng() % 10);
          op.call = NowNs();
          Status st;
          if (dice < 4) {
            op.kind = HistoryOp::kPut;
            op.value = "w" + std::to_string(t) + "n" + std::to_string(n);
            st = c->Put(op.key, op.value);
          } else if (dice < 5) {
            op.kind = HistoryOp::kDelete;
            st = c->Delete(op.key);
          } else {
            op.kind = HistoryOp::kGet;
            st = c->Get(op.key, &op.value);
            op.found = st.ok();
            if (st.IsNotFound()) st = Status::Ok();
          }
          op.ret = NowNs();
          const bool timed_out =
              timeouts_allowed_ && (st.code() == StatusCode::kTimedOut ||
                                    st.code() == StatusCode::kUnavailable);
          if (timed_out &&
              op.ret - op.call <
                  std::chrono::nanoseconds(load_timeout_).count() / 2) {
            // An op that failed at once: a connection that failed before
            // answered it with its old error instead of connecting again.
            fast_failures_++;
          }
          if (!st.ok() && op.kind != HistoryOp::kGet &&
              (st.code() == StatusCode::kUnavailable || timed_out)) {
            op.unknown = true;
            unknown_++;
          } else if (timed_out) {
            timeouts_++;  // a get that found no server: nothing to record
            continue;
          } else if (timeouts_allowed_ && st.IsWrongShard()) {
            // Refused until the op timeout: the shard changed hands (a
            // lease that lapsed under a starved CPU fails it over) and
            // the new map came later. Not applied: nothing to record.
            refused_++;
            continue;
          } else if (!st.ok()) {
            errors_++;
            ADD_FAILURE() << "client " << t << ": " << st.ToString();
            continue;
          }
          if (!op.unknown) served_++;
          history_[t].push_back(std::move(op));
          ops_++;
        }
      });
    }
  }
  std::vector<HistoryOp> StopLoad() {
    stop_ = true;
    for (auto& t : load_) t.join();
    load_.clear();
    std::vector<HistoryOp> all;
    for (auto& h : history_) all.insert(all.end(), h.begin(), h.end());
    return all;
  }

  // After a failover: ops go on for `for_how_long`, then the load stops;
  // every op succeeded but for unknown-outcome writes, some completed
  // after the failover, and the whole history is linearizable.
  void ExpectLinearizableAfter(std::chrono::milliseconds for_how_long) {
    const int at_failover = ops_.load();
    std::this_thread::sleep_for(for_how_long);
    std::vector<HistoryOp> history = StopLoad();
    EXPECT_EQ(errors_.load(), 0);
    EXPECT_GT(ops_.load(), at_failover) << "no op completed after the failover";
    std::fprintf(stderr, "%zu ops, %d with unknown outcome\n", history.size(),
                 unknown_.load());
    EXPECT_TRUE(NonLinearizableKeys(history).empty());
  }

  // The shard's replica set and epoch in etcd's map now.
  std::pair<std::vector<uint32_t>, uint32_t> ReplicasOf(uint32_t shard) {
    auto r = etcd_client_->Get("/rpkv/t/map");
    if (!r.ok() || r->kvs.empty()) return {{}, 0};
    auto map = cluster::ClusterMap::Decode(r->kvs[0].value);
    if (!map.ok()) return {{}, 0};
    for (const cluster::Shard& s : map->Find("users")->shards) {
      if (s.id == shard) return {s.replicas, s.epoch};
    }
    return {{}, 0};
  }
  // Waits until every shard's replica set is `want` (by shard).
  bool WaitForSets(const std::vector<std::vector<uint32_t>>& want,
                   std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      bool all = true;
      for (uint32_t i = 0; i < 4; i++) all &= ReplicasOf(i).first == want[i];
      if (all) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  // Partitions the primary of every shard (node 1) from its clients (its
  // port behind a proxy the test cuts) and, with `backups_too`, from its
  // backups as well (theirs cut too), while it still reaches etcd. Its
  // lease lives, so nothing fails over: every shard stays on it,
  // unfenced, and clients' ops time out or find no server (a write's
  // outcome is then unknown), each after waiting for its own answer. When
  // the partition heals the same clients are served again, and the
  // history is linearizable. (Served by the same primary, unless its lease
  // lapses after the heal on a starved machine and a backup takes over;
  // an op refused with wrong_shard until its timeout meanwhile was not
  // applied, and is not an error. A backup is dropped only if a write was
  // being forwarded at the cut: failures are found by the forwards.)
  //
  // Lease TTL 4 s: with 2 s a single keepalive that etcd does not answer
  // within its 1 s request timeout leaves no time for a retry, and under
  // TSan node 1's keepalives did time out right after the heal (the
  // burst of reconnections), so it fenced itself and, in the all-cut
  // variant, took with it shards whose backups the partition had dropped.
  void PartitionThePrimary(bool backups_too) {
    TcpProxy proxies[3];
    for (uint32_t id = 1; id <= 3; id++) {
      const int port = PickFreePort();
      ASSERT_TRUE(proxies[id - 1].Start(port));
      StartNode(
          id, 4, false, "",
          {"--listen=127.0.0.1:" + std::to_string(port),
           "--advertise=127.0.0.1:" + std::to_string(proxies[id - 1].port())});
    }
    WaitReplicated({{1, 2}, {1, 3}, {1, 2}, {1, 3}});
    load_timeout_ = seconds(4);
    timeouts_allowed_ = true;
    StartLoad();
    std::this_thread::sleep_for(seconds(1));
    proxies[0].Cut();
    if (backups_too) {
      proxies[1].Cut();
      proxies[2].Cut();
    }
    std::this_thread::sleep_for(seconds(1));
    const int in_partition = served_.load();
    // Past a lease TTL (4 s) and a controller pass: a failover would show.
    std::this_thread::sleep_for(seconds(6));
    EXPECT_EQ(served_.load(), in_partition)
        << "clients were served through the partition";
    // Each op waited for its own answer: none failed at once.
    EXPECT_EQ(fast_failures_.load(), 0);
    for (uint32_t s = 0; s < 4; s++) {
      auto [replicas, epoch] = ReplicasOf(s);
      ASSERT_FALSE(replicas.empty());
      EXPECT_EQ(replicas[0], 1u) << "shard " << s << " failed over";
    }
    EXPECT_EQ(nodes_[0].StderrText().find("fenced"), std::string::npos);
    for (TcpProxy& p : proxies) p.Restore();
    const int at_heal = served_.load();
    const auto healed = Clock::now();
    while (served_.load() < at_heal + 200 &&
           Clock::now() - healed < seconds(20)) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_GE(served_.load(), at_heal + 200)
        << "clients not served again after the partition healed";
    std::fprintf(
        stderr,
        "200 ops served within %lld ms of the heal; %d gets found no "
        "server, %d ops refused at the op timeout\n",
        static_cast<long long>(
            std::chrono::duration_cast<milliseconds>(Clock::now() - healed)
                .count()),
        timeouts_.load(), refused_.load());
    ExpectLinearizableAfter(seconds(1));
  }

  // The load's clients' op timeout, and whether an op may time out (a
  // write that did is of unknown outcome).
  std::chrono::milliseconds load_timeout_ = seconds(30);
  bool timeouts_allowed_ = false;
  std::atomic<int> timeouts_{0};
  std::atomic<int> refused_{0};  // wrong_shard at the op timeout
  std::atomic<int> served_{0};   // ops with a known outcome
  std::atomic<int> fast_failures_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> load_;
  std::vector<std::vector<HistoryOp>> history_;
  std::atomic<int> ops_{0};
  std::atomic<int> errors_{0};
  std::atomic<int> unknown_{0};
};

// Every acknowledged put is on the backup: after the primary's kill -9
// the controller promotes it, and every key reads back its value there.
TEST_F(ClusterReplicationTest, EveryAcknowledgedPutSurvivesThePrimarysKill) {
  StartReplicated(2, {{1, 2}, {1, 2}, {2, 1}, {2, 1}});
  std::unique_ptr<Client> c = Connect();
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 300; i++) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE(c->Put(k, "v" + std::to_string(i)).ok()) << k;
  }
  ASSERT_TRUE(c->Delete("k7").ok());
  const auto killed = Clock::now();
  nodes_[0].Kill9();
  // Node 2 leads (or takes over) the controller and promotes itself.
  ASSERT_TRUE(WaitForSets({{2}, {2}, {2}, {2}}, seconds(20)));
  const auto promoted = Clock::now();
  ASSERT_TRUE(nodes_[1].WaitForLog("promoted from backup"));
  ASSERT_TRUE(c->Put("after", "x").ok());
  const auto first_write = Clock::now();
  std::fprintf(
      stderr,
      "failover: kill -9 -> map promoted %lld ms, -> first "
      "acknowledged put %lld ms (lease TTL 2 s)\n",
      static_cast<long long>(
          std::chrono::duration_cast<milliseconds>(promoted - killed).count()),
      static_cast<long long>(
          std::chrono::duration_cast<milliseconds>(first_write - killed)
              .count()));
  for (int i = 0; i < 300; i++) {
    const std::string k = "k" + std::to_string(i);
    std::string v;
    Status st = c->Get(k, &v);
    if (i == 7) {
      EXPECT_TRUE(st.IsNotFound()) << st.ToString();
      continue;
    }
    ASSERT_TRUE(st.ok()) << k << ": " << st.ToString();
    EXPECT_EQ(v, "v" + std::to_string(i));
  }
}

// A primary stopped past its lease (SIGSTOP): its backup is promoted
// and acknowledges writes; the put the stopped node had in flight is never
// acknowledged by it; after SIGCONT it fences itself (exit 3) and no read
// returns its stale value.
TEST_F(ClusterReplicationTest, AStoppedPrimaryIsReplacedAndNeverAcknowledges) {
  StartReplicated(2, {{1, 2}, {1, 2}, {1, 2}, {1, 2}});
  std::unique_ptr<Client> c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v1").ok());
  std::unique_ptr<Client> w = Connect();
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->Put("k2", "a").ok());  // w's connection to node 1 is open
  ASSERT_EQ(kill(nodes_[0].pid(), SIGSTOP), 0);
  // A put sent to the stopped primary on that connection: its COMMIT
  // waits in the node's socket.
  Status stalled;
  std::thread writer([&] { stalled = w->Put("k2", "b"); });
  ASSERT_TRUE(WaitForSets({{2}, {2}, {2}, {2}}, seconds(20)));
  // The new primary acknowledges; its value is what reads see.
  ASSERT_TRUE(c->Put("k", "v2").ok());
  std::string v;
  ASSERT_TRUE(c->Get("k", &v).ok());
  EXPECT_EQ(v, "v2");
  ASSERT_EQ(kill(nodes_[0].pid(), SIGCONT), 0);
  EXPECT_EQ(nodes_[0].Wait(seconds(10)), 3) << nodes_[0].StderrText();
  EXPECT_NE(nodes_[0].StderrText().find("fenced"), std::string::npos);
  writer.join();
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(c->Get("k", &v).ok());
    EXPECT_EQ(v, "v2");
  }
  // The stalled put: refused by node 1 past its deadline (and retried on
  // node 2), or ended with the node (unknown outcome). Acknowledged means
  // it is there; otherwise either value may be.
  ASSERT_TRUE(c->Get("k2", &v).ok());
  if (stalled.ok()) {
    EXPECT_EQ(v, "b");
  } else {
    EXPECT_EQ(stalled.code(), StatusCode::kUnavailable) << stalled.ToString();
    EXPECT_TRUE(v == "a" || v == "b") << v;
  }
  std::fprintf(stderr, "the stalled put: %s\n", stalled.ToString().c_str());
}

// A stopped primary's one-sided reads are not kept once the map moved:
// two clients whose etcd traffic is cut still route to node 1 after the
// failover to node 2 and the new writes there. Their gets (one a single
// get, one a batch) wait in the stopped node's socket; the map reaches
// them; node 1 resumes and may serve those reads before it fences. The
// clients must read the new values: the map moved during the read, so
// the old primary's answer is dropped and the read goes again.
TEST_F(ClusterReplicationTest, AReadServedByADeposedPrimaryIsNotKept) {
  StartReplicated(2, {{1, 2}, {1, 2}, {1, 2}, {1, 2}});
  TcpProxy proxy;
  ASSERT_TRUE(proxy.Start(std::stoi(etcd_.endpoint().port)));
  auto through_proxy = [&] {
    ClientOptions o = ClusterOptions();
    o.cluster = "etcd://127.0.0.1:" + std::to_string(proxy.port());
    o.op_timeout = seconds(30);
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  };
  std::unique_ptr<Client> w = Connect();
  std::unique_ptr<Client> single = through_proxy();
  std::unique_ptr<Client> batched = through_proxy();
  ASSERT_TRUE(w && single && batched);
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f"};
  for (const std::string& k : keys) ASSERT_TRUE(w->Put(k, "old").ok());
  // Warm: each reader's slot cache and connection to node 1.
  std::string v;
  ASSERT_TRUE(single->Get("a", &v).ok());
  Batch warm;
  for (const std::string& k : keys) warm.Get(k);
  ASSERT_TRUE(batched->Execute(&warm).ok());

  proxy.Cut();  // the readers' map stays where it is
  ASSERT_EQ(kill(nodes_[0].pid(), SIGSTOP), 0);
  ASSERT_TRUE(WaitForSets({{2}, {2}, {2}, {2}}, seconds(20)));
  for (const std::string& k : keys) ASSERT_TRUE(w->Put(k, "new").ok());

  Status single_st;
  std::string single_v;
  std::thread t1([&] { single_st = single->Get("a", &single_v); });
  Batch reads;
  for (const std::string& k : keys) reads.Get(k);
  Status batch_st;
  std::thread t2([&] { batch_st = batched->Execute(&reads); });
  std::this_thread::sleep_for(milliseconds(300));  // reads sent to node 1
  proxy.Restore();
  std::this_thread::sleep_for(seconds(2));  // the map reaches the readers
  ASSERT_EQ(kill(nodes_[0].pid(), SIGCONT), 0);
  t1.join();
  t2.join();
  EXPECT_EQ(nodes_[0].Wait(seconds(10)), 3) << nodes_[0].StderrText();
  ASSERT_TRUE(single_st.ok()) << single_st.ToString();
  EXPECT_EQ(single_v, "new");
  ASSERT_TRUE(batch_st.ok()) << batch_st.ToString();
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_TRUE(reads.result(i).status.ok())
        << reads.result(i).status.ToString();
    EXPECT_EQ(reads.result(i).value, "new") << keys[i];
  }
}

// A primary partitioned from etcd (its packets to etcd dropped) while
// clients and the other nodes still reach it: it stops acknowledging at
// its lease deadline and fences itself; its backup is promoted after the
// lease expired; the history across it is linearizable.
TEST_F(ClusterReplicationTest, APrimaryCutOffFromEtcdStopsAcknowledging) {
  TcpProxy proxy;
  ASSERT_TRUE(proxy.Start(std::stoi(etcd_.endpoint().port)));
  StartNode(1, 2, false, "etcd://127.0.0.1:" + std::to_string(proxy.port()));
  StartNode(2);
  StartNode(3);
  PutMap(ReplicatedMap({{1, 2}, {1, 3}, {1, 2}, {1, 3}}));
  for (uint32_t i = 0; i < 4; i++) {
    ASSERT_TRUE(Serving(1, "users.s" + std::to_string(i), 1));
  }
  ASSERT_TRUE(nodes_[1].WaitForLog("backup of shard 'users.s2' at epoch 1"));
  ASSERT_TRUE(nodes_[2].WaitForLog("backup of shard 'users.s3' at epoch 1"));
  StartLoad();
  std::this_thread::sleep_for(seconds(1));
  proxy.Cut();
  ASSERT_TRUE(WaitForSets({{2}, {3}, {2}, {3}}, seconds(20)));
  EXPECT_EQ(nodes_[0].Wait(seconds(10)), 3) << nodes_[0].StderrText();
  EXPECT_NE(nodes_[0].StderrText().find("fenced"), std::string::npos);
  ExpectLinearizableAfter(seconds(1));
}

// Eight clients under load while the primary of two shards is killed:
// writes in flight at the kill have unknown outcomes; everything else
// succeeds, and the whole history — across the failover — is
// linearizable (no acknowledged write lost, no stale read).
TEST_F(ClusterReplicationTest, AFailoverUnderLoadIsLinearizable) {
  StartReplicated(3, {{1, 2}, {1, 3}, {2, 3}, {3, 2}});
  StartLoad();
  std::this_thread::sleep_for(seconds(1));
  nodes_[0].Kill9();
  ASSERT_TRUE(WaitForSets({{2}, {3}, {2, 3}, {3, 2}}, seconds(20)));
  ExpectLinearizableAfter(seconds(2));
}

// A backup killed under load: the primaries report it, the controller
// drops it (epoch 2), and the writes waiting for it complete — paused,
// never failed. Then a primary dies: its shards fail over to the backup
// left, and nothing acknowledged is lost.
TEST_F(ClusterReplicationTest, ABackupsDeathPausesWritesAndLosesNothing) {
  StartReplicated(3, {{1, 2, 3}, {1, 3, 2}, {3, 1, 2}, {3, 2, 1}});
  StartLoad();
  std::this_thread::sleep_for(seconds(1));
  nodes_[1].Kill9();  // node 2: a backup of every shard
  ASSERT_TRUE(WaitForSets({{1, 3}, {1, 3}, {3, 1}, {3, 1}}, seconds(20)));
  const int at_drop = ops_.load();
  std::this_thread::sleep_for(seconds(1));
  EXPECT_GT(ops_.load(), at_drop) << "no op completed after the drop";
  nodes_[0].Kill9();  // node 1: primary of shards 0 and 1
  ASSERT_TRUE(WaitForSets({{3}, {3}, {3}, {3}}, seconds(20)));
  ExpectLinearizableAfter(seconds(1));
}

// A backup that everyone but etcd is partitioned from (its port behind a
// proxy the test cuts: the bytes stop, the connections stay open). Its
// lease lives, so nothing fails over; the primaries' forwards get no
// answer within the link timeout, they report it, the controller drops
// it, and the writes waiting for it complete — paused, never failed.
TEST_F(ClusterReplicationTest, ASilentBackupIsDroppedAndWritesGoOn) {
  const int port = PickFreePort();
  TcpProxy proxy;
  ASSERT_TRUE(proxy.Start(port));
  StartNode(1);
  StartNode(2, 2, false, "",
            {"--listen=127.0.0.1:" + std::to_string(port),
             "--advertise=127.0.0.1:" + std::to_string(proxy.port())});
  StartNode(3);
  WaitReplicated({{1, 2, 3}, {1, 3, 2}, {3, 1, 2}, {3, 2, 1}});
  StartLoad();
  std::this_thread::sleep_for(seconds(1));
  proxy.Cut();
  const auto cut = Clock::now();
  ASSERT_TRUE(WaitForSets({{1, 3}, {1, 3}, {3, 1}, {3, 1}}, seconds(30)));
  std::fprintf(stderr, "dropped %lld ms after the cut\n",
               static_cast<long long>(
                   std::chrono::duration_cast<milliseconds>(Clock::now() - cut)
                       .count()));
  // Dropped for its silence, by a primary's report: not a dead lease.
  const std::string primaries = nodes_[0].StderrText() + nodes_[2].StderrText();
  EXPECT_NE(primaries.find("backup node 2 failed: "), std::string::npos)
      << primaries;
  // Silent: a forward got no answer, or (a link that was connecting at
  // the cut, as seen under TSan) the handshake got none.
  EXPECT_TRUE(primaries.find("did not answer within") != std::string::npos ||
              primaries.find("no answer to the connection handshake") !=
                  std::string::npos ||
              primaries.find("did not accept within") != std::string::npos)
      << primaries;
  EXPECT_EQ(nodes_[1].StderrText().find("fenced"), std::string::npos);
  EXPECT_EQ(::kill(nodes_[1].pid(), 0), 0) << "node 2 exited";
  const int at_drop = ops_.load();
  std::this_thread::sleep_for(seconds(1));
  EXPECT_GT(ops_.load(), at_drop) << "no op completed after the drop";
  ExpectLinearizableAfter(seconds(1));
}

// A primary that everyone but etcd is partitioned from: clients and its
// backups (every node's port behind a proxy, all three cut).
TEST_F(ClusterReplicationTest, APrimaryCutOffFromAllButEtcdKeepsItsShards) {
  PartitionThePrimary(true);
}

// A primary its clients are partitioned from, still replicating to its
// backups: no map change at all, so only the cluster client's own
// handling of a silent connection gets it served again.
TEST_F(ClusterReplicationTest, APrimaryCutOffFromItsClientsKeepsItsShards) {
  PartitionThePrimary(false);
}

// The cluster heals itself: keyspace "users" asked for with 2 replicas
// (the controller places it), a node killed under load, its shards fail
// over or lose a backup, and the controller adds a new backup to every
// degraded shard by a catch-up copy (a join). Then another node dies:
// every shard still has a copy with everything acknowledged.
TEST_F(ClusterReplicationTest, KillingAnyNodeLosesNothingAndTheClusterHeals) {
  StartNodes(3);
  ASSERT_TRUE(
      etcd_client_
          ->Put("/rpkv/t/keyspaces/users", R"({"replicas":2,"shards":4})")
          .ok());
  std::vector<std::vector<uint32_t>> sets;
  for (int i = 0; i < 100 && sets.size() < 4; i++) {
    sets.clear();
    for (uint32_t s = 0; s < 4; s++) {
      auto [r, e] = ReplicasOf(s);
      if (r.size() == 2) sets.push_back(r);
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(sets.size(), 4u) << "the controller did not place the keyspace";
  for (uint32_t s = 0; s < 4; s++) {
    const std::string shard = "users.s" + std::to_string(s);
    ASSERT_TRUE(Serving(sets[s][0], shard, 1)) << shard;
    ASSERT_TRUE(nodes_[sets[s][1] - 1].WaitForLog("backup of shard '" + shard +
                                                  "' at epoch 1"))
        << shard;
  }
  StartLoad();
  std::this_thread::sleep_for(seconds(1));
  nodes_[0].Kill9();
  // Healed: every shard on both live nodes again (2 and 3).
  const auto killed = Clock::now();
  bool healed = false;
  while (!healed && Clock::now() - killed < seconds(40)) {
    healed = true;
    for (uint32_t s = 0; s < 4; s++) {
      std::vector<uint32_t> r = ReplicasOf(s).first;
      std::sort(r.begin(), r.end());
      healed &= r == std::vector<uint32_t>{2, 3};
    }
    if (!healed) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(healed) << "the degraded shards got no new backup";
  // By a catch-up copy: a join, logged by the new backup.
  EXPECT_TRUE(nodes_[1].StderrText().find("joined after its catch-up copy") !=
                  std::string::npos ||
              nodes_[2].StderrText().find("joined after its catch-up copy") !=
                  std::string::npos);
  std::fprintf(stderr, "healed %lld ms after the kill\n",
               static_cast<long long>(std::chrono::duration_cast<milliseconds>(
                                          Clock::now() - killed)
                                          .count()));
  const int at_heal = ops_.load();
  std::this_thread::sleep_for(seconds(1));
  EXPECT_GT(ops_.load(), at_heal);
  // Another node dies: the last one holds every shard, nothing lost.
  nodes_[1].Kill9();
  ASSERT_TRUE(WaitForSets({{3}, {3}, {3}, {3}}, seconds(20)));
  ExpectLinearizableAfter(seconds(1));
}

}  // namespace
}  // namespace kv::e2e
