// Live shard moves (docs/cluster.md, "Moving a shard: the protocol"):
// real etcd, real kvserver nodes (each running the controller candidacy
// and its move manager), the cluster client. A move record is written as
// `kvadmin cluster move` writes it; the nodes and the elected controller
// carry it through copy, ready, handoff, released and the switch.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "cluster_fixture.h"
#include "kv/cluster/cluster_map.h"
#include "kv/cluster/move_record.h"
#include "linearizability.h"

namespace kv::e2e {
namespace {

using cluster::MovePhase;
using cluster::MoveRecord;
using Clock = std::chrono::steady_clock;

class ClusterMoveTest : public ClusterTest {
 protected:
  void TearDown() override {
    if (HasFailure()) {
      for (int i = 0; i < 3; i++) {
        fprintf(stderr, "---- node %d ----\n%s\n", i + 1,
                nodes_[i].StderrText().c_str());
      }
    }
    ClusterTest::TearDown();
  }
  void StartMove(uint32_t shard, uint32_t from, uint32_t to,
                 bool paused = false) {
    MoveRecord r;
    r.keyspace = "users";
    r.shard = shard;
    r.source = from;
    r.target = to;
    r.epoch = 1;
    r.paused = paused;
    ASSERT_TRUE(r.Validate().ok());
    ASSERT_TRUE(
        etcd_client_
            ->Put("/rpkv/t/moves/users/" + std::to_string(shard), r.Encode())
            .ok());
  }
  // The shard's primary and epoch in etcd's map now.
  std::pair<uint32_t, uint32_t> Owner(uint32_t shard) {
    auto r = etcd_client_->Get("/rpkv/t/map");
    if (!r.ok() || r->kvs.empty()) return {0, 0};
    auto map = cluster::ClusterMap::Decode(r->kvs[0].value);
    if (!map.ok()) return {0, 0};
    for (const cluster::KeyspaceShards& ks : map->keyspaces()) {
      for (const cluster::Shard& s : ks.shards) {
        if (ks.name == "users" && s.id == shard) return {s.primary(), s.epoch};
      }
    }
    return {0, 0};
  }
  bool MoveRecordGone(uint32_t shard) {
    auto r = etcd_client_->Get("/rpkv/t/moves/users/" + std::to_string(shard));
    return r.ok() && r->kvs.empty();
  }
  // Waits up to `bound` for pred.
  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::milliseconds bound) {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
  }
};

// Shard 0 (node 1) moves to node 2 while 8 clients put, delete and get
// (the linearizability checker judges the whole history across the
// switch) and the keys written before the move are checked after it.
TEST_F(ClusterMoveTest, AShardMovesUnderLoadLinearizablyAndLosesNothing) {
  StartNodes(3);
  PutMap(UsersMap({1, 2, 3, 1}, {1, 1, 1, 1}));
  for (uint32_t s = 0; s < 4; s++) {
    ASSERT_TRUE(Serving(s == 3 ? 1 : s + 1, "users.s" + std::to_string(s), 1));
  }
  // Keys for the copier: 3000, about 750 of them in shard 0.
  std::map<std::string, std::string> before;
  {
    auto c = Client::Connect(ClusterOptions());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    for (int i = 0; i < 3000; i++) {
      const std::string k = "p" + std::to_string(i);
      before[k] = "value-" + std::to_string(i);
      ASSERT_TRUE((*c)->Put(k, before[k]).ok());
    }
  }
  constexpr int kClients = 8, kKeys = 32;
  std::mutex mu;
  std::vector<HistoryOp> history;
  std::atomic<int> errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kClients; w++) {
    threads.emplace_back([&, w] {
      ClientOptions o = ClusterOptions();
      o.op_timeout = std::chrono::seconds(10);  // the hand-off's pause
      auto c = Client::Connect(o);
      if (!c.ok()) {
        errors++;
        ADD_FAILURE() << c.status().ToString();
        return;
      }
      std::vector<HistoryOp> mine = RandomOps(
          **c, w, kKeys, 50, [&] { return stop.load(); }, &errors);
      std::lock_guard<std::mutex> lock(mu);
      history.insert(history.end(), mine.begin(), mine.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = Clock::now();
  StartMove(0, 1, 2);
  const bool switched = WaitFor(
      [&] { return Owner(0) == std::make_pair(2u, 2u) && MoveRecordGone(0); },
      std::chrono::seconds(60));
  const auto took = Clock::now() - t0;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(switched) << "the move did not finish: node 1:\n"
                        << nodes_[0].StderrText() << "\nnode 2:\n"
                        << nodes_[1].StderrText();
  fprintf(
      stderr, "move of users.s0 under load: %lld ms\n",
      static_cast<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_TRUE(nodes_[1].WaitForLog("shard 'users.s0' moved here"));
  EXPECT_TRUE(nodes_[0].WaitForLog("dropped shard 'users.s0'"));
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(history.size(), size_t{kClients * 50});
  EXPECT_EQ(NonLinearizableKeys(history), std::vector<std::string>{});
  // Every key written before the move reads back, through the new owner.
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int checked = 0;
  for (const auto& [k, v] : before) {
    std::string got;
    Status st = (*c)->Get(k, &got);
    ASSERT_TRUE(st.ok()) << k << ": " << st.ToString();
    ASSERT_EQ(got, v) << k;
    checked += ShardOf(k) == 0;
  }
  EXPECT_GT(checked, 500);
  // And node 2 serves shard 0 directly; node 1 refuses it.
  auto direct = Direct(2, "users.s0", 2);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_TRUE(Direct(1, "users.s0", 2).status().IsWrongShard());
}

// A paused move, cancelled: the source serves on, unharmed; the target
// stops receiving; nothing switched.
TEST_F(ClusterMoveTest, ACancelledMoveLeavesTheSourceServing) {
  StartNodes(2);
  PutMap(UsersMap({1, 2, 1, 2}, {1, 1, 1, 1}));
  ASSERT_TRUE(Serving(1, "users.s0", 1));
  auto c = Client::Connect(ClusterOptions());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE((*c)->Put("k" + std::to_string(i), "v").ok());
  }
  StartMove(0, 1, 2, /*paused=*/true);
  ASSERT_TRUE(nodes_[0].WaitForLog("move of 'users.s0' to node 2"));
  ASSERT_TRUE(nodes_[1].WaitForLog("move of 'users.s0' here from node 1"));
  // Writes go on during the paused copy (forwarded).
  for (int i = 0; i < 50; i++) {
    ASSERT_TRUE((*c)->Put("k" + std::to_string(i), "during").ok());
  }
  auto rec = etcd_client_->Get("/rpkv/t/moves/users/0");
  ASSERT_TRUE(rec.ok() && !rec->kvs.empty());
  auto r = MoveRecord::Decode("users", 0, rec->kvs[0].value);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->phase, MovePhase::kCopy) << "a paused move went on";
  r->phase = MovePhase::kCancel;
  r->reason = "test cancels";
  ASSERT_TRUE(etcd_client_->Put("/rpkv/t/moves/users/0", r->Encode()).ok());
  ASSERT_TRUE(
      WaitFor([&] { return MoveRecordGone(0); }, std::chrono::seconds(10)))
      << nodes_[0].StderrText();
  // The target stops receiving: it saw the cancel, or (when the source
  // deleted the record first) the record gone without the switch.
  EXPECT_TRUE(WaitFor(
      [&] {
        const std::string log = nodes_[1].StderrText();
        return log.find("here cancelled") != std::string::npos ||
               log.find("here ended without the switch") != std::string::npos;
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(Owner(0), std::make_pair(1u, 1u));
  for (int i = 0; i < 200; i++) {
    const std::string k = "k" + std::to_string(i);
    ASSERT_TRUE((*c)->Put(k, "after").ok()) << k;
    std::string got;
    ASSERT_TRUE((*c)->Get(k, &got).ok());
    EXPECT_EQ(got, "after");
  }
}

}  // namespace
}  // namespace kv::e2e
