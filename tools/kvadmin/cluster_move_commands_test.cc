// kvadmin's move and drain commands on a FakeEtcd (unit): each command,
// each refusal, the races their guards catch, and what status shows of
// moves and drains (text and JSON).
#include "cluster_move_commands.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cluster_commands.h"
#include "cluster_test_util.h"
#include "commands.h"
#include "kv/cluster/fake_etcd.h"
#include "kv/cluster/move_record.h"
#include "kv/cluster/node_registration.h"

namespace kv::kvadmin {
namespace {

using cluster::ClusterMap;
using cluster::MovePhase;
using cluster::MoveRecord;
using cluster::ShardRef;
using cluster::testing::FaultyEtcd;

class ClusterMoveCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Register(1);
    Register(2);
    // users: shard 0 on node 1 at epoch 3, shard 1 on node 2 at epoch 1.
    PutMap(ClusterMap::Build(
               {{"users",
                 1,
                 {{0, 3, {1}, {{0, 511}}}, {1, 1, {2}, {{512, 1023}}}}}})
               .value());
  }
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
  ClusterMap Map() {
    return ClusterMap::Decode(etcd_.Get(keys_.map())->kvs.at(0).value).value();
  }
  MoveRecord Record(MovePhase phase, uint32_t target = 2) {
    MoveRecord r;
    r.keyspace = "users";
    r.shard = 0;
    r.source = 1;
    r.target = target;
    r.epoch = 3;
    r.phase = phase;
    return r;
  }
  void Put(const MoveRecord& r) {
    ASSERT_TRUE(etcd_.Put(keys_.move(r.keyspace, r.shard), r.Encode()).ok());
  }
  std::optional<MoveRecord> Get(uint32_t shard = 0) {
    cluster::Range r = etcd_.Get(keys_.move("users", shard)).value();
    if (r.kvs.empty()) return std::nullopt;
    return MoveRecord::Decode("users", shard, r.kvs[0].value).value();
  }
  void Clear() {
    out_.str("");
    err_.str("");
  }
  int Move(uint32_t shard, uint32_t to, const std::string& ks = "users") {
    Clear();
    return ClusterMove(etcd_, keys_, ShardRef{ks, shard}, to, out_, err_);
  }
  int MoveVia(cluster::Etcd& e, uint32_t to) {
    Clear();
    return ClusterMove(e, keys_, ShardRef{"users", 0}, to, out_, err_);
  }
  int Change(const MoveChange& c, cluster::Etcd* e = nullptr) {
    Clear();
    return ClusterMoveChange(e ? *e : etcd_, keys_, ShardRef{"users", 0}, c,
                             out_, err_);
  }
  int Drain(uint32_t node, bool drain) {
    Clear();
    return ClusterDrain(etcd_, keys_, node, drain, out_, err_);
  }
  int Status(bool json) {
    Clear();
    return ClusterStatus(etcd_, keys_, out_, err_, json);
  }
  bool Err(const std::string& part) {
    return err_.str().find(part) != std::string::npos;
  }
  bool Out(const std::string& part) {
    return out_.str().find(part) != std::string::npos;
  }

  cluster::FakeEtcd etcd_;
  cluster::EtcdKeys keys_ = cluster::EtcdKeys::ForCluster("t").value();
  std::ostringstream out_, err_;
};

TEST_F(ClusterMoveCommandsTest, MoveCreatesTheRecordFromTheMap) {
  ASSERT_EQ(Move(0, 2), kExitOk) << err_.str();
  EXPECT_EQ(*Get(), Record(MovePhase::kCopy));
  EXPECT_TRUE(
      Out("moving users/0 from node 1 to node 2 (epoch 3): the "
          "record is /rpkv/t/moves/users/0"))
      << out_.str();
  // Only the record was written.
  EXPECT_EQ(Map().Find("users")->shards[0].epoch, 3u);
}

TEST_F(ClusterMoveCommandsTest, MoveRefusesWhatCannotMove) {
  Register(3);
  Register(4);
  PutMap(ClusterMap::Build(
             {{"users",
               1,
               {{0, 3, {1, 3}, {{0, 511}}}, {1, 1, {2}, {{512, 1023}}}}}})
             .value());
  ASSERT_TRUE(etcd_.Put(keys_.drain(4), "1").ok());
  const int64_t rev = etcd_.revision();
  const struct {
    std::string ks;
    uint32_t shard, to;
    const char* says;
  } cases[] = {
      {"orders", 0, 2, "the cluster map has no keyspace 'orders'"},
      {"users", 7, 2, "keyspace 'users' has no shard 7 (it has 2)"},
      {"users", 0, 9, "node 9 is not a live node"},
      {"users", 0, 1, "node 1 is the primary of users/0 already"},
      {"users", 0, 3, "node 3 holds a replica of users/0 already"},
      {"users", 0, 4,
       "node 4 is draining: it takes no shards (kvadmin cluster undrain 4 "
       "first)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Move(c.shard, c.to, c.ks), kExitFailed) << c.says;
    EXPECT_TRUE(Err(c.says)) << err_.str();
    EXPECT_TRUE(Err("(nothing changed)")) << err_.str();
  }
  EXPECT_EQ(etcd_.revision(), rev);
}

TEST_F(ClusterMoveCommandsTest, MoveRefusesASecondMoveAndAnUnreadableOne) {
  Register(3);
  Put(Record(MovePhase::kReady));
  const int64_t rev = etcd_.revision();
  EXPECT_EQ(Move(0, 3), kExitFailed);
  EXPECT_TRUE(
      Err("a move of users/0 exists already (node 1 -> node 2, phase "
          "ready); kvadmin cluster move-cancel users 0 ends it"))
      << err_.str();
  ASSERT_TRUE(etcd_.Put(keys_.move("users", 1), "{garbage").ok());
  EXPECT_EQ(Move(1, 3), kExitFailed);
  EXPECT_TRUE(Err("the move record of users/1 does not decode")) << err_.str();
  EXPECT_EQ(etcd_.Get(keys_.move("users", 1))->kvs.at(0).value, "{garbage");
  EXPECT_EQ(Get()->target, 2u);
  EXPECT_EQ(etcd_.revision(), rev + 1);  // only the garbage put
}

TEST_F(ClusterMoveCommandsTest, MoveRefusesWhenTheSourceIsNotLive) {
  ASSERT_TRUE(etcd_.Delete(keys_.node(1)).ok());
  EXPECT_EQ(Move(0, 2), kExitFailed);
  EXPECT_TRUE(
      Err("the primary of users/0, node 1, is not live: a move needs "
          "its source"))
      << err_.str();
  EXPECT_FALSE(Get().has_value());
}

TEST_F(ClusterMoveCommandsTest, MoveRefusesAnUnreadableMap) {
  ASSERT_TRUE(etcd_.Put(keys_.map(), "{").ok());
  EXPECT_EQ(Move(0, 2), kExitFailed);
  EXPECT_TRUE(Err("does not decode")) << err_.str();
  EXPECT_FALSE(Get().has_value());
}

TEST_F(ClusterMoveCommandsTest, MoveLosingToAnotherMoveSaysSo) {
  Register(3);
  FaultyEtcd racy(etcd_);
  racy.SetBeforeTxnPutting(keys_.move("users", 0),
                           [&] { Put(Record(MovePhase::kCopy, 3)); });
  EXPECT_EQ(MoveVia(racy, 2), kExitFailed);
  EXPECT_TRUE(Err("a move of users/0 exists already (node 1 -> node 3"))
      << err_.str();
  EXPECT_EQ(Get()->target, 3u);  // theirs stays
}

TEST_F(ClusterMoveCommandsTest, MoveGuardsTheMapAndTheTargetsRegistration) {
  // The map gives the shard to node 2 while kvadmin decides: the record
  // (source 1 at epoch 3) must not be written.
  FaultyEtcd racy(etcd_);
  racy.SetBeforeTxnPutting(keys_.move("users", 0), [&] {
    PutMap(Map().WithReplicas("users", 0, {2}).value());
  });
  EXPECT_EQ(MoveVia(racy, 2), kExitFailed);
  EXPECT_TRUE(Err("node 2 is the primary of users/0 already")) << err_.str();
  EXPECT_FALSE(Get().has_value());
  // Node 2 re-registers (another lease) meanwhile: checked again, then
  // written.
  PutMap(Map().WithReplicas("users", 0, {1}).value());
  racy.SetBeforeTxnPutting(keys_.move("users", 0), [&] { Register(2); });
  EXPECT_EQ(MoveVia(racy, 2), kExitOk) << err_.str();
  EXPECT_EQ(racy.TxnsPutting(keys_.move("users", 0)), 3);
  EXPECT_EQ(Get()->epoch, 5u);
}

TEST_F(ClusterMoveCommandsTest, PauseResumeAndRate) {
  Put(Record(MovePhase::kCopy));
  ASSERT_EQ(Change({.paused = true}), kExitOk) << err_.str();
  EXPECT_TRUE(Get()->paused);
  EXPECT_TRUE(
      Out("the move of users/0 is paused: the copier waits, writes "
          "are still forwarded to node 2"))
      << out_.str();
  const int64_t rev = etcd_.revision();
  ASSERT_EQ(Change({.paused = true}), kExitOk);
  EXPECT_TRUE(Out("is paused already (nothing changed)")) << out_.str();
  EXPECT_EQ(etcd_.revision(), rev);
  ASSERT_EQ(Change({.paused = false}), kExitOk);
  EXPECT_FALSE(Get()->paused);
  ASSERT_EQ(Change({.rate = 10 << 20}), kExitOk);
  EXPECT_EQ(Get()->rate_bytes_per_s, 10u << 20);
  EXPECT_TRUE(Out("copies at most 10.0 MiB/s")) << out_.str();
  ASSERT_EQ(Change({.rate = 10 << 20}), kExitOk);
  EXPECT_TRUE(Out("has the rate 10.0 MiB/s already")) << out_.str();
  ASSERT_EQ(Change({.rate = 0}), kExitOk);
  EXPECT_EQ(Get()->rate_bytes_per_s, 0u);
  // Everything else as it was.
  MoveRecord expect = Record(MovePhase::kCopy);
  EXPECT_EQ(*Get(), expect);
}

TEST_F(ClusterMoveCommandsTest, ChangesRefusedWithoutAMoveOrAfterTheCopy) {
  EXPECT_EQ(Change({.paused = true}), kExitFailed);
  EXPECT_TRUE(Err("there is no move of users/0")) << err_.str();
  EXPECT_EQ(Change({.cancel = true}), kExitFailed);
  ASSERT_TRUE(etcd_.Put(keys_.move("users", 0), "[]").ok());
  EXPECT_EQ(Change({.rate = 5}), kExitFailed);
  EXPECT_TRUE(Err("/rpkv/t/moves/users/0 does not decode")) << err_.str();
  for (MovePhase p : {MovePhase::kReleased, MovePhase::kCancel}) {
    Put(Record(p));
    const int64_t rev = etcd_.revision();
    EXPECT_EQ(Change({.paused = true}), kExitFailed);
    EXPECT_TRUE(Err("its copier is done, nothing to pause")) << err_.str();
    EXPECT_EQ(Change({.rate = 1}), kExitFailed);
    EXPECT_EQ(etcd_.revision(), rev);
  }
}

TEST_F(ClusterMoveCommandsTest, CancelUntilReleased) {
  for (MovePhase p :
       {MovePhase::kCopy, MovePhase::kReady, MovePhase::kHandoff}) {
    Put(Record(p));
    ASSERT_EQ(Change({.cancel = true}), kExitOk) << err_.str();
    MoveRecord expect = Record(MovePhase::kCancel);
    expect.reason = "cancelled by kvadmin";
    EXPECT_EQ(*Get(), expect);
    EXPECT_TRUE(Out("node 1 tears down and deletes the record")) << out_.str();
  }
  ASSERT_EQ(Change({.cancel = true}), kExitOk);
  EXPECT_TRUE(
      Out("is being cancelled already (cancelled by kvadmin) "
          "(nothing changed)"))
      << out_.str();
}

TEST_F(ClusterMoveCommandsTest,
       AReleasedMoveIsCancelledOnlyByForceAndADeadTarget) {
  Put(Record(MovePhase::kReleased));
  const int64_t rev = etcd_.revision();
  EXPECT_EQ(Change({.cancel = true}), kExitFailed);
  EXPECT_TRUE(
      Err("is released: its source handed the shard off and the "
          "controller switches it to node 2"))
      << err_.str();
  EXPECT_EQ(Change({.cancel = true, .force = true}), kExitFailed);
  EXPECT_TRUE(Err("its target node 2 is live: the controller switches it"))
      << err_.str();
  EXPECT_EQ(etcd_.revision(), rev);
  ASSERT_TRUE(etcd_.Delete(keys_.node(2)).ok());  // the target is gone
  ASSERT_EQ(Change({.cancel = true, .force = true}), kExitOk) << err_.str();
  EXPECT_EQ(Get()->phase, MovePhase::kCancel);
  EXPECT_EQ(Get()->reason,
            "cancelled by kvadmin (--force: target node 2 not live)");
}

TEST_F(ClusterMoveCommandsTest, ACancelThatLosesToTheReleaseIsRefused) {
  Put(Record(MovePhase::kHandoff));
  FaultyEtcd racy(etcd_);
  // The source releases the shard while kvadmin decides.
  racy.SetBeforeTxnPutting(keys_.move("users", 0),
                           [&] { Put(Record(MovePhase::kReleased)); });
  EXPECT_EQ(Change({.cancel = true}, &racy), kExitFailed);
  EXPECT_TRUE(Err("is released")) << err_.str();
  EXPECT_EQ(Get()->phase, MovePhase::kReleased);
}

TEST_F(ClusterMoveCommandsTest, DrainAndUndrain) {
  ASSERT_EQ(Drain(1, true), kExitOk) << err_.str();
  EXPECT_FALSE(etcd_.Get(keys_.drain(1))->kvs.empty());
  EXPECT_TRUE(
      Out("node 1 drains: the controller moves its 1 shard to other "
          "live nodes"))
      << out_.str();
  EXPECT_TRUE(err_.str().empty()) << err_.str();
  const int64_t rev = etcd_.revision();
  ASSERT_EQ(Drain(1, true), kExitOk);
  EXPECT_TRUE(Out("node 1 is draining already (nothing changed)"));
  EXPECT_EQ(etcd_.revision(), rev);
  ASSERT_EQ(Drain(1, false), kExitOk);
  EXPECT_TRUE(etcd_.Get(keys_.drain(1))->kvs.empty());
  EXPECT_TRUE(Out("node 1 no longer drains")) << out_.str();
  ASSERT_EQ(Drain(1, false), kExitOk);
  EXPECT_TRUE(Out("node 1 was not draining (nothing changed)"));
}

TEST_F(ClusterMoveCommandsTest, DrainRefusesAnUnknownNodeAndWarnsWhenStuck) {
  EXPECT_EQ(Drain(9, true), kExitFailed);
  EXPECT_TRUE(Err("node 9 is neither registered nor named by the map"));
  EXPECT_TRUE(etcd_.Get(keys_.drain(9))->kvs.empty());
  ASSERT_EQ(Drain(2, true), kExitOk);
  ASSERT_EQ(Drain(1, true), kExitOk);
  EXPECT_TRUE(Err("warning: no other live node that is not draining"))
      << err_.str();
  // A node the map names but that is not registered may drain (later).
  ASSERT_TRUE(etcd_.Delete(keys_.node(2)).ok());
  ASSERT_EQ(Drain(2, false), kExitOk);
  ASSERT_EQ(Drain(2, true), kExitOk);
  EXPECT_TRUE(Err("warning: node 2 is not live")) << err_.str();
}

TEST_F(ClusterMoveCommandsTest, StatusShowsMovesAndDrains) {
  Register(3);
  MoveRecord copying = Record(MovePhase::kCopy, 3);
  copying.paused = true;
  copying.rate_bytes_per_s = 1 << 20;
  Put(copying);
  cluster::MoveProgress p;
  p.keys_copied = 250;
  p.keys_total = 1000;
  p.bytes_copied = 3 << 20;
  p.keys_forwarded = 7;
  p.updated_unix_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count() -
      3000);
  ASSERT_TRUE(etcd_.Put(keys_.move_progress("users", 0), p.Encode()).ok());
  MoveRecord cancelled = Record(MovePhase::kCancel, 3);
  cancelled.shard = 1;
  cancelled.source = 2;
  cancelled.epoch = 1;
  cancelled.reason = "target node 3 is not live";
  cancelled.join = true;  // a new backup's catch-up: shown as +>
  Put(cancelled);
  ASSERT_TRUE(etcd_.Put(keys_.drain(1), "1").ok());
  ASSERT_TRUE(etcd_.Put(keys_.drain(3), "1").ok());
  ASSERT_EQ(Status(false), kExitOk) << err_.str();
  const std::string s = out_.str();
  EXPECT_NE(s.find("moves: 2\n"
                   "    move     nodes   phase   paused  rate       keys     "
                   "       bytes    forwarded  updated\n"
                   "    users/0  1 -> 3  copy    yes     1.0 MiB/s  250/1000 "
                   "(25%)  3.0 MiB  7          3 s ago\n"
                   "    users/1  2 +> 3  cancel  no      none       -        "
                   "       -        -          no report yet\n"
                   "      reason: target node 3 is not live\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("draining: 2\n  node 1: 1 shard left\n  node 3: drained "
                   "(no shards left)\n"),
            std::string::npos)
      << s;

  ASSERT_EQ(Status(true), kExitOk) << err_.str();
  const nlohmann::json j = nlohmann::json::parse(out_.str());
  ASSERT_EQ(j["moves"].size(), 2u);
  const nlohmann::json& m = j["moves"][0];
  EXPECT_EQ(m["keyspace"], "users");
  EXPECT_EQ(m["shard"], 0);
  EXPECT_EQ(m["source"], 1);
  EXPECT_EQ(m["target"], 3);
  EXPECT_EQ(m["phase"], "copy");
  EXPECT_EQ(m["join"], false);
  EXPECT_EQ(j["moves"][1]["join"], true);
  EXPECT_EQ(m["paused"], true);
  EXPECT_EQ(m["rate_bytes_per_s"], 1 << 20);
  EXPECT_EQ(m["progress"]["keys_copied"], 250);
  EXPECT_EQ(m["progress"]["keys_total"], 1000);
  EXPECT_EQ(m["progress"]["bytes_copied"], 3 << 20);
  EXPECT_EQ(m["progress"]["keys_forwarded"], 7);
  EXPECT_GE(m["progress"]["age_ms"].get<int64_t>(), 3000);
  EXPECT_LT(m["progress"]["age_ms"].get<int64_t>(), 60000);
  EXPECT_TRUE(j["moves"][1]["progress"].is_null());
  EXPECT_EQ(j["moves"][1]["reason"], "target node 3 is not live");
  ASSERT_EQ(j["draining"].size(), 2u);
  EXPECT_EQ(j["draining"][0]["node"], 1);
  EXPECT_EQ(j["draining"][0]["primaries_left"], 1);
  EXPECT_EQ(j["draining"][1]["primaries_left"], 0);
  EXPECT_EQ(j["cluster"], "t");
  EXPECT_TRUE(j["controller"].is_null());
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["nodes"][0]["draining"], true);
  EXPECT_EQ(j["keyspaces"][0]["shards"][0]["epoch"], 3);
  EXPECT_TRUE(j["problems"].empty());
}

TEST_F(ClusterMoveCommandsTest, StatusJsonOfAGarbageMapStillParses) {
  ASSERT_TRUE(etcd_.Put(keys_.map(), "{\"format\":1}").ok());
  ASSERT_TRUE(etcd_.Put(keys_.move("users", 0), "\xff\xfe").ok());
  EXPECT_EQ(Status(true), kExitFailed);
  const nlohmann::json j = nlohmann::json::parse(out_.str());
  EXPECT_TRUE(j["keyspaces"].is_null());
  EXPECT_NE(j["map_error"].get<std::string>().find("cluster map"),
            std::string::npos);
  EXPECT_EQ(j["problems"].size(), 1u);
  EXPECT_TRUE(Err("does not decode")) << err_.str();
}

}  // namespace
}  // namespace kv::kvadmin
