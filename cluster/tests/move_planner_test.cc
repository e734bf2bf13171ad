// PlanMoves (move_planner.h): drains and rebalancing as move records.
#include "kv/cluster/move_planner.h"

#include <gtest/gtest.h>

#include "kv/cluster/placement.h"

namespace kv::cluster {
namespace {

// `primaries[i]` is the one replica of shard i of keyspace "ks"; shard i
// is at epoch i + 1.
ClusterMap MapOf(const std::vector<uint32_t>& primaries) {
  KeyspaceShards ks{"ks", 1, {}};
  const uint32_t n = static_cast<uint32_t>(primaries.size());
  for (uint32_t i = 0; i < n; i++) {
    ks.shards.push_back({i, i + 1, {primaries[i]}, {EvenSlotRange(i, n)}});
  }
  return ClusterMap::Build({ks}).value();
}

MoveRecord Record(uint32_t shard, uint32_t source, uint32_t target,
                  MovePhase phase = MovePhase::kCopy) {
  MoveRecord r;
  r.keyspace = "ks";
  r.shard = shard;
  r.source = source;
  r.target = target;
  r.epoch = shard + 1;
  r.phase = phase;
  return r;
}

TEST(MovePlannerTest, DrainMovesTheNodesShardsToTheLeastLoaded) {
  // Node 1: shards 0-3; node 2: shard 4; node 3: nothing.
  const ClusterMap m = MapOf({1, 1, 1, 1, 2});
  MovePlanRequest req;
  req.live = {3, 1, 2};
  req.draining = {1};
  req.max_moves = 10;
  MovePlan p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 4u);
  // Least loaded first: 3 (0), then 2 and 3 in turn.
  EXPECT_EQ(p.create[0], Record(0, 1, 3));
  EXPECT_EQ(p.create[1], Record(1, 1, 2));
  EXPECT_EQ(p.create[2], Record(2, 1, 3));
  EXPECT_EQ(p.create[3], Record(3, 1, 2));
  for (const MoveRecord& r : p.create) EXPECT_TRUE(r.Validate().ok());
  ASSERT_EQ(p.changes.size(), 4u);
  EXPECT_EQ(p.changes[0],
            "start move 'ks'/0 node 1 -> node 3 at epoch 1 (drain node 1)");
  EXPECT_TRUE(p.problems.empty());
}

TEST(MovePlannerTest, AtMostMaxMovesInFlightCountingExistingRecords) {
  const ClusterMap m = MapOf({1, 1, 1, 1, 2});
  MovePlanRequest req;
  req.live = {1, 2, 3};
  req.draining = {1};
  req.max_moves = 2;
  EXPECT_EQ(PlanMoves(m, req).create.size(), 2u);
  // One in flight (a cancel counts too, and so does an unreadable key):
  // room for one more, and never for the shard that has one.
  req.moves = {Record(0, 1, 3, MovePhase::kCancel)};
  MovePlan p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 1u);
  EXPECT_EQ(p.create[0].shard, 1u);
  req.unreadable = {{"ks", 1}};
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
  req.max_moves = 3;
  p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 1u);
  EXPECT_EQ(p.create[0].shard, 2u);
  req.max_moves = 0;
  req.moves.clear();
  req.unreadable.clear();
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
}

TEST(MovePlannerTest, DrainingNodesAreNeverTargets) {
  const ClusterMap m = MapOf({1, 2});
  MovePlanRequest req;
  req.live = {1, 2, 3};
  req.draining = {1, 3};
  req.max_moves = 5;
  MovePlan p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 1u);
  EXPECT_EQ(p.create[0], Record(0, 1, 2));
  // Everyone else drains too: nowhere to go, said so.
  req.draining = {1, 2, 3};
  p = PlanMoves(m, req);
  EXPECT_TRUE(p.create.empty());
  ASSERT_EQ(p.problems.size(), 2u);
  EXPECT_NE(p.problems[0].find("keyspace 'ks' shard 0 of draining node 1 has "
                               "nowhere to go"),
            std::string::npos)
      << p.problems[0];
}

TEST(MovePlannerTest, ADeadDrainingNodeKeepsItsShardsAndIsReported) {
  const ClusterMap m = MapOf({1, 2});
  MovePlanRequest req;
  req.live = {2, 3};
  req.draining = {1};
  req.max_moves = 5;
  MovePlan p = PlanMoves(m, req);
  EXPECT_TRUE(p.create.empty());
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("node 1 is draining but not live"),
            std::string::npos);
}

TEST(MovePlannerTest, ADrainedNodeWithNothingLeftNeedsNothing) {
  const ClusterMap m = MapOf({2, 2});
  MovePlanRequest req;
  req.live = {1, 2};
  req.draining = {1};
  MovePlan p = PlanMoves(m, req);
  EXPECT_TRUE(p.create.empty());
  EXPECT_TRUE(p.problems.empty());
  // Not live and empty: nothing to report either.
  req.live = {2};
  EXPECT_TRUE(PlanMoves(m, req).problems.empty());
}

TEST(MovePlannerTest, RebalanceOnlyWhenAskedFromMostToLeastLoaded) {
  const ClusterMap m = MapOf({1, 1, 1, 1, 2, 2});  // loads 4, 2, 0
  MovePlanRequest req;
  req.live = {1, 2, 3};
  req.max_moves = 10;
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
  req.rebalance = true;
  MovePlan p = PlanMoves(m, req);
  // 4,2,0 -> 3,2,1 -> 2,2,2.
  ASSERT_EQ(p.create.size(), 2u);
  EXPECT_EQ(p.create[0], Record(0, 1, 3));
  EXPECT_EQ(p.create[1], Record(1, 1, 3));
  EXPECT_NE(p.changes[0].find("(rebalance)"), std::string::npos);
  // Within max_moves.
  req.max_moves = 1;
  EXPECT_EQ(PlanMoves(m, req).create.size(), 1u);
  // A move in flight counts as done for the loads: 3,2,1 projected.
  req.max_moves = 10;
  req.moves = {Record(0, 1, 3)};
  p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 1u);
  EXPECT_EQ(p.create[0], Record(1, 1, 3));
  // Balanced within 1: nothing.
  EXPECT_TRUE(
      PlanMoves(MapOf({1, 1, 2, 3, 3}), {{1, 2, 3}, {}, {}, {}, true, 5, {}})
          .create.empty());
}

TEST(MovePlannerTest, RebalanceLeavesDrainingNodesOut) {
  const ClusterMap m = MapOf({1, 1, 1, 1});  // node 2 empty but draining
  MovePlanRequest req{{1, 2}, {2}, {}, {}, true, 5, {}};
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
}

// Rule 0: a shard of a desired keyspace with fewer replicas than wanted
// gets a join to the least loaded live node that holds none of it; not
// twice, not past max_moves, not from a dead primary, not beyond the
// live nodes.
TEST(MovePlannerTest, ADegradedShardGetsAJoinToTheLeastLoadedNode) {
  // Shard 0 on {1} (degraded), shard 1 on {2, 3}; keyspace wants 2.
  KeyspaceShards ks{"ks", 1, {}};
  ks.shards.push_back({0, 4, {1}, {EvenSlotRange(0, 2)}});
  ks.shards.push_back({1, 1, {2, 3}, {EvenSlotRange(1, 2)}});
  const ClusterMap m = ClusterMap::Build({ks}).value();
  MovePlanRequest req;
  req.live = {1, 2, 3, 4};
  req.max_moves = 5;
  req.desired = {{"ks", 2, 2}};
  MovePlan p = PlanMoves(m, req);
  ASSERT_EQ(p.create.size(), 1u);
  MoveRecord want = Record(0, 1, 4);  // node 4 holds nothing
  want.epoch = 4;
  want.join = true;
  EXPECT_EQ(p.create[0], want);
  EXPECT_NE(p.changes[0].find("start join"), std::string::npos) << p.changes[0];
  // In flight: nothing more.
  req.moves = {want};
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
  // A dead primary cannot be a join's source; no node left: a problem.
  req.moves.clear();
  req.live = {2, 3, 4};
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
  // Fewer live nodes than replicas: nothing to do, nothing said (placement
  // reported it).
  req.live = {1};
  p = PlanMoves(m, req);
  EXPECT_TRUE(p.create.empty());
  EXPECT_TRUE(p.problems.empty());
  // A draining node is no target.
  req.live = {1, 2, 4};
  req.draining = {4};
  KeyspaceShards one{"ks", 1, {{0, 4, {1}, {{0, 1023}}}}};
  p = PlanMoves(ClusterMap::Build({one}).value(), req);
  ASSERT_EQ(p.create.size(), 1u);
  EXPECT_EQ(p.create[0].target, 2u);
  req.draining.clear();
  // Not desired (a map written by hand): no join.
  req.live = {1, 2, 3, 4};
  req.desired.clear();
  EXPECT_TRUE(PlanMoves(m, req).create.empty());
}

}  // namespace
}  // namespace kv::cluster
