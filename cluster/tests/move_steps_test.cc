// StepMoves (move_steps.h): each rule for an existing move record, and
// the switch's map.
#include "kv/cluster/move_steps.h"

#include <gtest/gtest.h>

namespace kv::cluster {
namespace {

// users: shard 0 on node 1 at epoch 3, shard 1 on node 2 at epoch 1.
ClusterMap Map() {
  return ClusterMap::Build(
             {{"users",
               1,
               {{0, 3, {1}, {{0, 511}}}, {1, 1, {2}, {{512, 1023}}}}}})
      .value();
}

MoveEntry Move(MovePhase phase, uint32_t source = 1, uint32_t target = 3,
               uint32_t shard = 0, uint32_t epoch = 3) {
  MoveRecord r;
  r.keyspace = "users";
  r.shard = shard;
  r.source = source;
  r.target = target;
  r.epoch = epoch;
  r.phase = phase;
  return {r, 42};
}

MoveSteps Steps(const std::vector<MoveEntry>& moves,
                std::vector<uint32_t> live = {1, 2, 3}) {
  return StepMoves(Map(), live, moves);
}

TEST(MoveStepsTest, ReadyIsHandedOffAndNothingElseMovesOnItsOwn) {
  MoveSteps s = Steps({Move(MovePhase::kReady)});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kHandoff);
  EXPECT_EQ(s.steps[0].move.mod_revision, 42);
  EXPECT_EQ(s.steps[0].change,
            "move 'users'/0 node 1 -> node 3: ready -> handoff");
  MoveRecord next = SteppedRecord(s.steps[0]);
  EXPECT_EQ(next.phase, MovePhase::kHandoff);
  next.phase = MovePhase::kReady;
  EXPECT_EQ(next, s.steps[0].move.record);  // nothing else changed
  EXPECT_TRUE(s.problems.empty());
  // copy, handoff and cancel are the nodes' to advance.
  for (MovePhase p :
       {MovePhase::kCopy, MovePhase::kHandoff, MovePhase::kCancel}) {
    MoveSteps none = Steps({Move(p)});
    EXPECT_TRUE(none.steps.empty()) << MovePhaseName(p);
    EXPECT_TRUE(none.problems.empty()) << MovePhaseName(p);
  }
}

TEST(MoveStepsTest, ReleasedIsSwitchedToTheTargetAtTheNextEpoch) {
  MoveSteps s = Steps({Move(MovePhase::kReleased)});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kSwitch);
  Result<ClusterMap> m = SwitchedMap(Map(), s.steps[0].move.record);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Shard& moved = m->Find("users")->shards[0];
  EXPECT_EQ(moved.replicas, std::vector<uint32_t>{3});
  EXPECT_EQ(moved.epoch, 4u);
  EXPECT_EQ(moved.slots, Map().Find("users")->shards[0].slots);
  // The other shard is untouched.
  EXPECT_EQ(m->Find("users")->shards[1].epoch, 1u);
  EXPECT_EQ(m->Find("users")->shards[1].replicas, std::vector<uint32_t>{2});
}

// A replicated shard keeps its backups across the switch (the target
// becomes primary; a backup that is the target is not listed twice).
TEST(MoveStepsTest, TheSwitchKeepsTheBackups) {
  ClusterMap m =
      ClusterMap::Build({{"users", 1, {{0, 3, {1, 2, 4}, {{0, 1023}}}}}})
          .value();
  MoveRecord r = Move(MovePhase::kReleased).record;
  r.source = 1;
  r.target = 3;
  r.epoch = 3;
  Result<ClusterMap> to3 = SwitchedMap(m, r);
  ASSERT_TRUE(to3.ok()) << to3.status().ToString();
  EXPECT_EQ(to3->Find("users")->shards[0].replicas,
            (std::vector<uint32_t>{3, 2, 4}));
  EXPECT_EQ(to3->Find("users")->shards[0].epoch, 4u);
  r.target = 4;
  Result<ClusterMap> to4 = SwitchedMap(m, r);
  ASSERT_TRUE(to4.ok()) << to4.status().ToString();
  EXPECT_EQ(to4->Find("users")->shards[0].replicas,
            (std::vector<uint32_t>{4, 2}));
}

// A join's switch appends the target to the replica set; a released
// join whose target died (or whose map moved on) is cancelled: its source
// still holds the shard.
TEST(MoveStepsTest, AJoinSwitchesTheTargetInAsABackupOrIsCancelled) {
  ClusterMap m =
      ClusterMap::Build({{"users", 1, {{0, 3, {1, 2}, {{0, 1023}}}}}}).value();
  MoveRecord r = Move(MovePhase::kReleased).record;  // 1 -> 3 at epoch 3
  r.join = true;
  Result<ClusterMap> joined = SwitchedMap(m, r);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->Find("users")->shards[0].replicas,
            (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(joined->Find("users")->shards[0].epoch, 4u);
  MoveRecord twice = r;
  twice.target = 2;  // a replica already
  EXPECT_FALSE(SwitchedMap(m, twice).ok());
  MoveSteps live = StepMoves(m, {1, 2, 3}, {{r, 7}});
  ASSERT_EQ(live.steps.size(), 1u);
  EXPECT_EQ(live.steps[0].kind, MoveStep::Kind::kSwitch);
  EXPECT_NE(live.steps[0].change.find("joins the replica set"),
            std::string::npos)
      << live.steps[0].change;
  MoveSteps dead = StepMoves(m, {1, 2}, {{r, 7}});
  ASSERT_EQ(dead.steps.size(), 1u);
  EXPECT_EQ(dead.steps[0].kind, MoveStep::Kind::kCancel);
}

TEST(MoveStepsTest, ARecordTheMapMovedPastIsNotSwitchedButReported) {
  for (const MoveEntry& m :
       {Move(MovePhase::kReleased, 1, 3, 0, /*epoch=*/2),  // older epoch
        Move(MovePhase::kReleased, 2, 3, 0, 3),            // other primary
        Move(MovePhase::kReleased, 1, 3, 5, 3)}) {         // no such shard
    MoveSteps s = Steps({m});
    EXPECT_TRUE(s.steps.empty());
    ASSERT_EQ(s.problems.size(), 1u);
    EXPECT_NE(s.problems[0].find("is released but not switched"),
              std::string::npos)
        << s.problems[0];
    EXPECT_FALSE(SwitchedMap(Map(), m.record).ok());
  }
  MoveRecord other = Move(MovePhase::kReleased).record;
  other.keyspace = "orders";
  EXPECT_NE(CheckMapHoldsMove(Map(), other).message().find("no keyspace"),
            std::string::npos);
  // Before released, the same mismatch cancels the move instead.
  MoveSteps s = Steps({Move(MovePhase::kCopy, 1, 3, 0, 2)});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kCancel);
  EXPECT_NE(s.steps[0].reason.find("the map moved on: the shard is at epoch 3"),
            std::string::npos)
      << s.steps[0].reason;
}

TEST(MoveStepsTest, ADeadTargetCancelsAMoveBeforeItIsReleased) {
  for (MovePhase p :
       {MovePhase::kCopy, MovePhase::kReady, MovePhase::kHandoff}) {
    MoveSteps s = Steps({Move(p)}, {1, 2});
    ASSERT_EQ(s.steps.size(), 1u) << MovePhaseName(p);
    EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kCancel);
    EXPECT_EQ(s.steps[0].reason, "target node 3 is not live");
    const MoveRecord r = SteppedRecord(s.steps[0]);
    EXPECT_EQ(r.phase, MovePhase::kCancel);
    EXPECT_EQ(r.reason, "target node 3 is not live");
    EXPECT_TRUE(r.Validate().ok());
  }
  // A cancel record is the source's to delete.
  EXPECT_TRUE(Steps({Move(MovePhase::kCancel)}, {1, 2}).steps.empty());
}

TEST(MoveStepsTest, ADeadSourcesRecordIsDeletedByTheController) {
  for (MovePhase p : {MovePhase::kCopy, MovePhase::kReady, MovePhase::kHandoff,
                      MovePhase::kCancel}) {
    MoveSteps s = Steps({Move(p)}, {2, 3});
    ASSERT_EQ(s.steps.size(), 1u) << MovePhaseName(p);
    EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kDelete);
    EXPECT_EQ(s.steps[0].reason, "source node 1 is not live");
  }
  // Both dead: still deleted (nobody else will).
  MoveSteps s = Steps({Move(MovePhase::kCopy)}, {2});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kDelete);
}

TEST(MoveStepsTest, AReleasedMoveIsNeverCancelledByTheController) {
  // Target dead: left as it is, reported (the shard is unavailable).
  MoveSteps s = Steps({Move(MovePhase::kReleased)}, {1, 2});
  EXPECT_TRUE(s.steps.empty());
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_NE(s.problems[0].find("its target node 3 is not live: the shard is "
                               "unavailable until that node returns"),
            std::string::npos)
      << s.problems[0];
  // Source dead: the target has everything the source acknowledged, so
  // the switch goes ahead.
  s = Steps({Move(MovePhase::kReleased)}, {2, 3});
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kSwitch);
}

TEST(MoveStepsTest, OneStepPerRecordInRecordOrder) {
  MoveSteps s =
      Steps({Move(MovePhase::kReleased), Move(MovePhase::kReady, 2, 3, 1, 1)});
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].kind, MoveStep::Kind::kSwitch);
  EXPECT_EQ(s.steps[1].kind, MoveStep::Kind::kHandoff);
  EXPECT_EQ(s.steps[1].move.record.shard, 1u);
}

}  // namespace
}  // namespace kv::cluster
