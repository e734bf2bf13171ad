// The controller's side of live moves on a FakeEtcd and a FakeClock: the
// steps of existing records (handoff, switch, cancel, delete) and the
// moves it starts (drain, rebalance), each write guarded as
// controller.h says.
#include <gtest/gtest.h>

#include "cluster_test_util.h"
#include "kv/cluster/controller.h"
#include "kv/cluster/membership.h"
#include "kv/cluster/move_record.h"

namespace kv::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeCluster;
using testing::FaultyEtcd;
using testing::WaitFor;

class ControllerMovesTest : public ::testing::Test {
 protected:
  void AddNode(uint32_t id) {
    Membership::Options o;
    o.cluster = "c";
    o.node_id = id;
    o.address = "127.0.0.1:" + std::to_string(7000 + id);
    o.lease.ttl = seconds(6);
    o.clock = &f_.clock;
    auto m = Membership::Join(f_.etcd, o, nullptr);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    nodes_[id] = std::move(*m);
  }

  Controller::Options Opts() {
    Controller::Options o;
    o.cluster = "c";
    o.node_id = 1;
    o.lease.ttl = seconds(6);
    o.clock = &f_.clock;
    o.poll = milliseconds(20);
    o.max_moves = 1;
    return o;
  }

  std::unique_ptr<Controller> Start(Etcd& etcd, Controller::Options o) {
    auto c = Controller::Start(etcd, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // users: shard s on primaries[s] at epoch 3, slots split evenly.
  void PutMap(const std::vector<uint32_t>& primaries) {
    KeyspaceShards ks{"users", 1, {}};
    const uint32_t n = static_cast<uint32_t>(primaries.size());
    for (uint32_t i = 0; i < n; i++) {
      ks.shards.push_back(
          {i, 3, {primaries[i]}, {{i * 1024 / n, (i + 1) * 1024 / n - 1}}});
    }
    ASSERT_TRUE(
        f_.etcd.Put(keys_.map(), ClusterMap::Build({ks}).value().Encode())
            .ok());
  }
  ClusterMap Map() {
    return ClusterMap::Decode(f_.etcd.Get(keys_.map())->kvs.at(0).value)
        .value();
  }
  int64_t MapRevision() {
    return f_.etcd.Get(keys_.map())->kvs.at(0).mod_revision;
  }

  MoveRecord Record(uint32_t shard, uint32_t source, uint32_t target,
                    MovePhase phase) {
    MoveRecord r;
    r.keyspace = "users";
    r.shard = shard;
    r.source = source;
    r.target = target;
    r.epoch = 3;
    r.phase = phase;
    return r;
  }
  void Put(const MoveRecord& r) {
    ASSERT_TRUE(f_.etcd.Put(keys_.move(r.keyspace, r.shard), r.Encode()).ok());
  }
  void PutProgress(uint32_t shard) {
    MoveProgress p;
    p.keys_copied = 5;
    ASSERT_TRUE(
        f_.etcd.Put(keys_.move_progress("users", shard), p.Encode()).ok());
  }
  std::optional<MoveRecord> Get(uint32_t shard) {
    Range r = f_.etcd.Get(keys_.move("users", shard)).value();
    if (r.kvs.empty()) return std::nullopt;
    return MoveRecord::Decode("users", shard, r.kvs[0].value).value();
  }
  std::vector<MoveRecord> Records() {
    std::vector<MoveRecord> out;
    const Range range = f_.etcd.GetPrefix(keys_.moves_prefix()).value();
    for (const KeyValue& kv : range.kvs) {
      ShardRef ref = keys_.MoveOf(kv.key).value();
      out.push_back(
          MoveRecord::Decode(ref.keyspace, ref.shard, kv.value).value());
    }
    return out;
  }
  static std::string All(const std::vector<std::string>& lines) {
    std::string s;
    for (const std::string& l : lines) s += l + "\n";
    return s;
  }
  static bool Has(const std::vector<std::string>& lines,
                  const std::string& part) {
    return All(lines).find(part) != std::string::npos;
  }

  FakeCluster f_;
  EtcdKeys keys_ = EtcdKeys::ForCluster("c").value();
  std::map<uint32_t, std::unique_ptr<Membership>> nodes_;
};

TEST_F(ControllerMovesTest, HandsOffAReadyMove) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 2});
  Put(Record(0, 1, 2, MovePhase::kReady));
  const int64_t map_rev = MapRevision();
  auto c = Start(f_.etcd, Opts());
  ASSERT_TRUE(WaitFor([&] {
    std::optional<MoveRecord> r = Get(0);
    return r && r->phase == MovePhase::kHandoff;
  }));
  MoveRecord expect = Record(0, 1, 2, MovePhase::kHandoff);
  EXPECT_EQ(*Get(0), expect);  // only the phase changed
  EXPECT_EQ(MapRevision(), map_rev);
  ASSERT_TRUE(WaitFor([&] { return c->stats().passes >= 2; }));
  EXPECT_TRUE(Has(c->stats().last_changes,
                  "move 'users'/0 node 1 -> node 2: ready -> handoff"))
      << All(c->stats().last_changes);
  // A handoff is the source's to advance: nothing more happens.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(Get(0)->phase, MovePhase::kHandoff);
  EXPECT_EQ(c->stats().writes, 1);
}

TEST_F(ControllerMovesTest, SwitchesAReleasedMoveInOneTransaction) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 2});
  MoveRecord released = Record(0, 1, 2, MovePhase::kReleased);
  released.last_sequence = 77;
  Put(released);
  PutProgress(0);
  const int64_t from = f_.etcd.revision() + 1;
  auto c = Start(f_.etcd, Opts());
  ASSERT_TRUE(WaitFor([&] { return !Get(0).has_value(); }));
  const ClusterMap m = Map();
  EXPECT_EQ(m.Find("users")->shards[0].replicas, std::vector<uint32_t>{2});
  EXPECT_EQ(m.Find("users")->shards[0].epoch, 4u);
  EXPECT_EQ(m.Find("users")->shards[1].epoch, 3u);  // untouched
  EXPECT_TRUE(f_.etcd.Get(keys_.move_progress("users", 0))->kvs.empty());
  // The map, the record and the progress changed at one revision: one
  // transaction.
  auto w = f_.etcd.Watch(keys_.prefix(), from).value();
  std::map<std::string, int64_t> at;
  while (true) {
    std::vector<WatchEvent> events = w->Next(milliseconds(50)).value();
    if (events.empty()) break;
    for (const WatchEvent& e : events) {
      if (e.key == keys_.controller()) continue;
      EXPECT_FALSE(at.contains(e.key)) << e.key << " changed twice";
      at[e.key] = e.mod_revision;
    }
  }
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[keys_.map()], at[keys_.move("users", 0)]);
  EXPECT_EQ(at[keys_.map()], at[keys_.move_progress("users", 0)]);
  EXPECT_TRUE(Has(c->stats().last_changes,
                  "released -> the map gives it to node 2 at epoch 4"))
      << All(c->stats().last_changes);
}

TEST_F(ControllerMovesTest, ASwitchThatLostItsRaceIsDecidedAgain) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 2});
  Put(Record(0, 1, 2, MovePhase::kReleased));
  FaultyEtcd racy(f_.etcd);
  // kvadmin changes the record just before the switch: its guard fails.
  racy.SetBeforeTxnPutting(keys_.map(), [&] {
    MoveRecord r = Record(0, 1, 2, MovePhase::kReleased);
    r.rate_bytes_per_s = 1000;
    Put(r);
  });
  auto c = Start(racy, Opts());
  ASSERT_TRUE(WaitFor([&] { return !Get(0).has_value(); }));
  EXPECT_EQ(Map().Find("users")->shards[0].replicas, std::vector<uint32_t>{2});
  EXPECT_EQ(Map().Find("users")->shards[0].epoch, 4u);
  EXPECT_EQ(c->stats().lost_races, 1);
  EXPECT_EQ(racy.TxnsPutting(keys_.map()), 2);
}

TEST_F(ControllerMovesTest, AMapThatMovedOnIsNotSwitched) {
  AddNode(1);
  AddNode(2);
  AddNode(3);
  PutMap({1, 2});
  Put(Record(0, 1, 2, MovePhase::kReleased));
  FaultyEtcd racy(f_.etcd);
  // Just before the switch, someone else gives shard 0 to node 3 (by
  // hand): the switch must neither overwrite that nor delete the record.
  ClusterMap theirs;
  racy.SetBeforeTxnPutting(keys_.map(), [&] {
    theirs = Map().WithReplicas("users", 0, {3}).value();
    ASSERT_TRUE(f_.etcd.Put(keys_.map(), theirs.Encode()).ok());
  });
  auto c = Start(racy, Opts());
  ASSERT_TRUE(WaitFor([&] {
    return Has(c->stats().last_problems,
               "move 'users'/0 node 1 -> node 2 is released but not "
               "switched: the map moved on: the shard is at epoch 4 with "
               "primary node 3");
  })) << All(c->stats().last_problems);
  EXPECT_EQ(Map(), theirs);
  ASSERT_TRUE(Get(0).has_value());
  EXPECT_EQ(Get(0)->phase, MovePhase::kReleased);
  EXPECT_EQ(c->stats().lost_races, 1);
  EXPECT_EQ(c->stats().writes, 0);
}

TEST_F(ControllerMovesTest, ADeadTargetCancelsTheMove) {
  AddNode(1);
  AddNode(2);
  AddNode(3);
  PutMap({1, 2});
  Put(Record(0, 1, 3, MovePhase::kCopy));
  PutProgress(0);
  auto c = Start(f_.etcd, Opts());
  ASSERT_TRUE(WaitFor([&] { return c->stats().passes >= 1; }));
  EXPECT_EQ(Get(0)->phase, MovePhase::kCopy);  // both alive: left alone
  // Node 3 crashes: no Leave, its lease expires.
  nodes_.erase(3);
  for (int i = 0; i < 7; i++) {
    f_.Advance(seconds(1));
    // 2 memberships and the election renew (two sleepers each).
    ASSERT_TRUE(WaitFor([&] { return f_.clock.sleepers() >= 6; }));
  }
  ASSERT_TRUE(WaitFor([&] {
    std::optional<MoveRecord> r = Get(0);
    return r && r->phase == MovePhase::kCancel;
  }));
  MoveRecord expect = Record(0, 1, 3, MovePhase::kCancel);
  expect.reason = "target node 3 is not live";
  EXPECT_EQ(*Get(0), expect);
  // The source tears down and deletes it; the controller does not.
  EXPECT_FALSE(f_.etcd.Get(keys_.move_progress("users", 0))->kvs.empty());
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_TRUE(Get(0).has_value());
}

TEST_F(ControllerMovesTest, ADeadSourcesMoveIsDeleted) {
  AddNode(2);
  AddNode(3);
  PutMap({1, 2});  // node 1 is not registered
  Put(Record(0, 1, 3, MovePhase::kHandoff));
  PutProgress(0);
  const ClusterMap before = Map();
  auto c = Start(f_.etcd, Opts());
  ASSERT_TRUE(WaitFor([&] { return !Get(0).has_value(); }));
  // The pass records its changes after its transaction: wait for them too
  // (read at once, they were seen empty under load in CI).
  EXPECT_TRUE(WaitFor([&] {
    return Has(c->stats().last_changes,
               "handoff -> deleted (source node 1 is not live)");
  })) << All(c->stats().last_changes);
  EXPECT_TRUE(f_.etcd.Get(keys_.move_progress("users", 0))->kvs.empty());
  EXPECT_EQ(Map(), before);  // the shard waits for node 1 (no replica)
}

TEST_F(ControllerMovesTest, AReleasedMoveWhoseTargetDiedIsLeftAndReported) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 2});
  Put(Record(0, 1, 3, MovePhase::kReleased));  // node 3 is not registered
  const int64_t rev = f_.etcd.revision();
  auto c = Start(f_.etcd, Opts());
  ASSERT_TRUE(WaitFor([&] {
    return Has(c->stats().last_problems,
               "is released but its target node 3 is not live: the shard is "
               "unavailable until that node returns");
  })) << All(c->stats().last_problems);
  EXPECT_EQ(Get(0)->phase, MovePhase::kReleased);
  EXPECT_EQ(c->stats().writes, 0);
  // Nothing but the election key changed.
  EXPECT_EQ(f_.etcd.Get(keys_.move("users", 0))->kvs.at(0).mod_revision <= rev,
            true);
  EXPECT_LE(MapRevision(), rev);
}

TEST_F(ControllerMovesTest, DrainStartsMovesWithinMaxMoves) {
  for (uint32_t id : {1, 2, 3}) AddNode(id);
  PutMap({1, 1, 1, 2});
  ASSERT_TRUE(f_.etcd.Put(keys_.drain(1), "1764000000000").ok());
  const int64_t map_rev = MapRevision();
  Controller::Options o = Opts();
  o.max_moves = 2;
  auto c = Start(f_.etcd, o);
  ASSERT_TRUE(WaitFor([&] { return Records().size() == 2; }));
  std::this_thread::sleep_for(milliseconds(100));
  std::vector<MoveRecord> r = Records();
  ASSERT_EQ(r.size(), 2u);  // not 3: max_moves
  EXPECT_EQ(r[0], Record(0, 1, 3, MovePhase::kCopy));
  EXPECT_EQ(r[1], Record(1, 1, 2, MovePhase::kCopy));
  EXPECT_EQ(MapRevision(), map_rev);  // a move never changes the map alone
  // One move ends (switched, as the controller would, by hand here):
  // room for the last shard.
  ASSERT_TRUE(
      f_.etcd
          .Txn(
              {},
              {TxnOp::Put(keys_.map(),
                          Map().WithReplicas("users", 0, {3}).value().Encode()),
               TxnOp::Delete(keys_.move("users", 0))},
              {})
          .ok());
  ASSERT_TRUE(WaitFor([&] { return Get(2).has_value(); }));
  EXPECT_EQ(Get(2)->source, 1u);
  EXPECT_EQ(Get(2)->target, 3u);  // 3 is the least loaded again
  EXPECT_EQ(Records().size(), 2u);
}

TEST_F(ControllerMovesTest, ADrainRunsToTheEndWithSourcesThatAdvance) {
  for (uint32_t id : {1, 2, 3}) AddNode(id);
  PutMap({1, 1, 2, 3});
  ASSERT_TRUE(f_.etcd.Put(keys_.drain(1), "").ok());
  auto c = Start(f_.etcd, Opts());
  // A stand-in for the source nodes: copy -> ready, handoff -> released.
  auto node_side = [&] {
    for (MoveRecord r : Records()) {
      if (r.phase == MovePhase::kCopy)
        r.phase = MovePhase::kReady;
      else if (r.phase == MovePhase::kHandoff)
        r.phase = MovePhase::kReleased;
      else
        continue;
      Put(r);
    }
  };
  auto drained = [&] {
    const ClusterMap m = Map();
    for (const Shard& s : m.Find("users")->shards) {
      if (s.primary() == 1) return false;
    }
    return Records().empty();
  };
  ASSERT_TRUE(WaitFor([&] {
    node_side();
    return drained();
  })) << All(c->stats().last_problems);
  const ClusterMap m = Map();
  EXPECT_EQ(m.Find("users")->shards[0].epoch, 4u);
  EXPECT_EQ(m.Find("users")->shards[1].epoch, 4u);
  EXPECT_EQ(m.Find("users")->shards[2].epoch, 3u);
  // Node 1 stays drained, with nothing to do.
  EXPECT_FALSE(f_.etcd.Get(keys_.drain(1))->kvs.empty());
  ASSERT_TRUE(WaitFor([&] { return c->stats().last_problems.empty(); }));
}

TEST_F(ControllerMovesTest, RebalanceStartsMovesAndNeverRewritesTheMap) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 1, 1, 1});
  const ClusterMap before = Map();
  const int64_t map_rev = MapRevision();
  Controller::Options o = Opts();
  o.rebalance = true;
  o.max_moves = 1;
  auto c = Start(f_.etcd, o);
  ASSERT_TRUE(WaitFor([&] { return Records().size() == 1; }));
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(Records().size(), 1u);
  EXPECT_EQ(Records()[0], Record(0, 1, 2, MovePhase::kCopy));
  EXPECT_EQ(Map(), before);
  EXPECT_EQ(MapRevision(), map_rev);
  EXPECT_TRUE(Has(c->stats().last_changes,
                  "start move 'users'/0 node 1 -> node 2 at epoch 3 "
                  "(rebalance)"))
      << All(c->stats().last_changes);
}

TEST_F(ControllerMovesTest, AMapPlanningErrorDoesNotStallMoves) {
  AddNode(1);
  AddNode(2);
  // The map's keyspace has the largest id: a desired keyspace gets none
  // (no_space), yet the move goes on.
  ASSERT_TRUE(
      f_.etcd
          .Put(keys_.map(), ClusterMap::Build({{"users",
                                                kMaxClusterKeyspaceId,
                                                {{0, 3, {1}, {{0, 1023}}}}}})
                                .value()
                                .Encode())
          .ok());
  Put(Record(0, 1, 2, MovePhase::kReady));
  Controller::Options o = Opts();
  o.desired = {{"orders", 1, 1}};
  auto c = Start(f_.etcd, o);
  ASSERT_TRUE(WaitFor([&] {
    std::optional<MoveRecord> r = Get(0);
    return r && r->phase == MovePhase::kHandoff;
  }));
  ASSERT_TRUE(WaitFor([&] {
    return c->stats().last_error.find("planning the map: no_space") !=
           std::string::npos;
  })) << c->stats().last_error;
}

TEST_F(ControllerMovesTest, GarbageMoveKeysAreReportedAndNeverOverwritten) {
  AddNode(1);
  AddNode(2);
  PutMap({1, 1});
  ASSERT_TRUE(f_.etcd.Put(keys_.move("users", 0), "{garbage").ok());
  ASSERT_TRUE(f_.etcd.Put(keys_.moves_prefix() + "users/007", "{}").ok());
  ASSERT_TRUE(f_.etcd.Put(keys_.drain_prefix() + "x", "").ok());
  ASSERT_TRUE(f_.etcd.Put(keys_.drain(1), "").ok());
  Controller::Options o = Opts();
  o.max_moves = 5;
  auto c = Start(f_.etcd, o);
  // Shard 0 has an unreadable record: only shard 1 moves.
  ASSERT_TRUE(WaitFor([&] { return Get(1).has_value(); }));
  ASSERT_TRUE(WaitFor([&] { return c->stats().passes >= 2; }));
  const std::vector<std::string> p = c->stats().last_problems;
  EXPECT_EQ(p.size(), 3u) << All(p);
  EXPECT_TRUE(Has(p,
                  "ignoring /rpkv/c/moves/users/0: move record 'users'/0: "
                  "not a JSON object; fix or delete it with etcdctl"))
      << All(p);
  EXPECT_TRUE(Has(p,
                  "ignoring move: etcd key /rpkv/c/moves/users/007 does "
                  "not name a move"))
      << All(p);
  EXPECT_TRUE(Has(p, "ignoring drain key")) << All(p);
  EXPECT_EQ(f_.etcd.Get(keys_.move("users", 0))->kvs.at(0).value, "{garbage");
  EXPECT_TRUE(c->stats().last_error.empty()) << c->stats().last_error;
}

}  // namespace
}  // namespace kv::cluster
