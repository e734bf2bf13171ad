// PlanPlacement: each rule of placement.h, then invariants over random
// clusters.
#include "kv/cluster/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace kv::cluster {
namespace {

Placement Plan(const ClusterMap& m, std::vector<uint32_t> live,
               std::vector<KeyspaceSpec> desired = {}) {
  Result<Placement> p =
      PlanPlacement(m, {std::move(live), std::move(desired), {}});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(*p) : Placement{};
}

ClusterMap OneShard(std::vector<uint32_t> replicas, uint32_t epoch = 3) {
  return ClusterMap::Build(
             {{"ks", 1, {{0, epoch, std::move(replicas), {{0, 1023}}}}}})
      .value();
}

std::map<uint32_t, int> Count(const ClusterMap& m, bool primaries) {
  std::map<uint32_t, int> c;
  for (const auto& ks : m.keyspaces()) {
    for (const auto& s : ks.shards) {
      for (size_t i = 0; i < (primaries ? 1 : s.replicas.size()); i++) {
        c[s.replicas[i]]++;
      }
    }
  }
  return c;
}

int Spread(const std::map<uint32_t, int>& c, const std::vector<uint32_t>& n) {
  int lo = INT32_MAX, hi = 0;
  for (uint32_t id : n) {
    auto it = c.find(id);
    const int v = it == c.end() ? 0 : it->second;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return hi - lo;
}

TEST(PlacementTest, CreatesADesiredKeyspaceWithEvenSlotsAndSpreadReplicas) {
  Placement p = Plan(ClusterMap(), {3, 1, 2}, {{"users", 4, 2}});
  ASSERT_EQ(p.map.keyspaces().size(), 1u);
  const KeyspaceShards& ks = p.map.keyspaces()[0];
  EXPECT_EQ(ks.name, "users");
  EXPECT_EQ(ks.id, 1u);
  ASSERT_EQ(ks.shards.size(), 4u);
  for (uint32_t i = 0; i < 4; i++) {
    const Shard& s = ks.shards[i];
    EXPECT_EQ(s.id, i);
    EXPECT_EQ(s.epoch, 1u);
    ASSERT_EQ(s.slots.size(), 1u);
    EXPECT_EQ(s.slots[0].first, i * 256);
    EXPECT_EQ(s.slots[0].second, i * 256 + 255);
    ASSERT_EQ(s.replicas.size(), 2u);
    EXPECT_NE(s.replicas[0], s.replicas[1]);
  }
  // Least loaded first, ties by node id: shard 0 goes to nodes 1 and 2.
  EXPECT_EQ(ks.shards[0].replicas, (std::vector<uint32_t>{1, 2}));
  EXPECT_LE(Spread(Count(p.map, true), {1, 2, 3}), 1);
  EXPECT_LE(Spread(Count(p.map, false), {1, 2, 3}), 1);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_NE(p.changes[0].find("create keyspace 'users' id 1"),
            std::string::npos);
  EXPECT_TRUE(p.problems.empty());
}

TEST(PlacementTest, UnevenShardCountsStillCoverEverySlotContiguously) {
  for (uint32_t n : {1u, 3u, 7u, 1000u, 1024u}) {
    Placement p = Plan(ClusterMap(), {1}, {{"k", n, 1}});
    const KeyspaceShards& ks = p.map.keyspaces().at(0);
    uint32_t next = 0, smallest = kSlotCount, largest = 0;
    for (const Shard& s : ks.shards) {
      EXPECT_EQ(s.slots[0].first, next);
      const uint32_t size = s.slots[0].second - s.slots[0].first + 1;
      smallest = std::min(smallest, size);
      largest = std::max(largest, size);
      next = s.slots[0].second + 1;
    }
    EXPECT_EQ(next, kSlotCount);
    EXPECT_LE(largest - smallest, 1u) << n;
  }
}

TEST(PlacementTest, NewKeyspacesTakeMaxIdPlusOne) {
  ClusterMap m = ClusterMap::Build({{"a", 1, {{0, 1, {1}, {{0, 1023}}}}},
                                    {"b", 5, {{0, 1, {1}, {{0, 1023}}}}}})
                     .value();
  Placement p = Plan(m, {1}, {{"c", 1, 1}, {"a", 1, 1}, {"d", 1, 1}});
  EXPECT_EQ(p.map.Find("c")->id, 6u);
  EXPECT_EQ(p.map.Find("d")->id, 7u);
  EXPECT_EQ(p.map.Find("a")->id, 1u);
  EXPECT_EQ(p.changes.size(), 2u);
}

TEST(PlacementTest, FewerLiveNodesThanReplicasIsReported) {
  Placement p = Plan(ClusterMap(), {1, 2}, {{"k", 2, 3}});
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].replicas.size(), 2u);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("2 of 3 replicas"), std::string::npos);
  Placement none = Plan(ClusterMap(), {}, {{"k", 2, 1}});
  EXPECT_TRUE(none.map.keyspaces().empty());
  EXPECT_FALSE(none.changed());
  EXPECT_NE(none.problems.at(0).find("no live node"), std::string::npos);
}

TEST(PlacementTest, DeadPrimaryPromotesTheFirstLiveBackup) {
  // Node 4 is live and holds nothing of the shard: it is not added (it
  // has none of the data).
  Placement p = Plan(OneShard({1, 2, 3}), {2, 3, 4});
  const Shard& s = p.map.keyspaces()[0].shards[0];
  EXPECT_EQ(s.replicas, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(s.epoch, 4u);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_NE(p.changes[0].find("node 2 promoted"), std::string::npos)
      << p.changes[0];
  EXPECT_NE(p.changes[0].find("epoch 3->4"), std::string::npos);
}

TEST(PlacementTest, ADeadBackupIsDroppedAndNotReplacedByAnEmptyNode) {
  ClusterMap m =
      ClusterMap::Build(
          {{"ks",
            1,
            {{0, 1, {1, 2}, {{0, 511}}}, {1, 1, {4, 3}, {{512, 1023}}}}}})
          .value();
  // Node 2 dies; node 5 is live and empty: it would hold none of the
  // shard's data, so the shard runs degraded on node 1 alone.
  Placement p = Plan(m, {1, 3, 4, 5});
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].replicas,
            (std::vector<uint32_t>{1}));
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].epoch, 2u);
  EXPECT_EQ(p.map.keyspaces()[0].shards[1].epoch, 1u);  // untouched
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("degraded with 1 of 2"), std::string::npos)
      << p.problems[0];
}

// A primary's report of a failed backup drops that backup, only at the
// shard's current epoch and never the primary itself.
TEST(PlacementTest, AReportedFailedBackupIsDroppedAtItsEpochOnly) {
  ClusterMap m = OneShard({1, 2, 3});  // epoch 3
  PlacementRequest r{{1, 2, 3}, {}, {{{"ks", 0}, 3, 3}}};
  Placement p = PlanPlacement(m, r).value();
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].replicas,
            (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].epoch, 4u);
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_NE(p.changes[0].find("backups [3] failed"), std::string::npos)
      << p.changes[0];
  for (const FailedBackup& ignored :
       {FailedBackup{{"ks", 0}, 3, 2},     // an older epoch
        FailedBackup{{"ks", 0}, 1, 3},     // the primary
        FailedBackup{{"ks", 1}, 3, 3},     // another shard
        FailedBackup{{"other", 0}, 3, 3},  // another keyspace
        FailedBackup{{"ks", 0}, 9, 3}}) {  // not a replica
    Placement same = PlanPlacement(m, {{1, 2, 3}, {}, {ignored}}).value();
    EXPECT_FALSE(same.changed()) << same.changes.at(0);
  }
}

TEST(PlacementTest, NoSpareNodeShrinksTheReplicaSetAndSaysSo) {
  Placement p = Plan(OneShard({1, 2}), {2});
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].replicas,
            (std::vector<uint32_t>{2}));
  EXPECT_EQ(p.map.keyspaces()[0].shards[0].epoch, 4u);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_NE(p.problems[0].find("1 of 2 replicas"), std::string::npos);
}

TEST(PlacementTest, ShardWithoutLiveReplicaStaysAndIsUnavailable) {
  ClusterMap m = OneShard({1, 2});
  Placement p = Plan(m, {3});
  EXPECT_EQ(p.map, m);  // epoch and replicas as they were
  EXPECT_FALSE(p.changed());
  ASSERT_EQ(p.unavailable.size(), 1u);
  EXPECT_EQ(p.unavailable[0], (ShardRef{"ks", 0}));
  EXPECT_NE(p.problems.at(0).find("unavailable"), std::string::npos);
}

TEST(PlacementTest, JoinedNodesGetNoShardsOfExistingKeyspaces) {
  // Giving them some would hand them shards without their data: that is a
  // live move's job (move_planner.h), never the map's alone.
  Placement first = Plan(ClusterMap(), {1, 2}, {{"k", 8, 1}});
  Placement quiet = Plan(first.map, {1, 2, 3}, {{"k", 8, 1}});
  EXPECT_FALSE(quiet.changed());
  EXPECT_EQ(quiet.map, first.map);
}

TEST(PlacementTest, NothingChangesWhenNothingNeedsTo) {
  Placement a = Plan(ClusterMap(), {1, 2, 3}, {{"x", 5, 2}, {"y", 3, 3}});
  Placement b = Plan(a.map, {1, 2, 3}, {{"x", 5, 2}, {"y", 3, 3}});
  EXPECT_FALSE(b.changed());
  EXPECT_EQ(b.map, a.map);
  EXPECT_TRUE(b.problems.empty());
}

TEST(PlacementTest, ReshardingIsNotPlannedButReported) {
  Placement a = Plan(ClusterMap(), {1}, {{"x", 2, 1}});
  Placement b = Plan(a.map, {1}, {{"x", 4, 1}});
  EXPECT_FALSE(b.changed());
  EXPECT_NE(b.problems.at(0).find("does not reshard"), std::string::npos);
}

TEST(PlacementTest, BadRequestsAreRefused) {
  auto code = [](PlacementRequest r) {
    return PlanPlacement(ClusterMap(), r).status().code();
  };
  EXPECT_EQ(code({{0}, {}, {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"k", 0, 1}}, {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"k", 1025, 1}}, {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"k", 1, 0}}, {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"k", 1, 9}}, {}}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"bad name!", 1, 1}}, {}}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(code({{1}, {{"k", 1, 1}, {"k", 2, 1}}, {}}),
            StatusCode::kInvalidArgument);
}

TEST(PlacementTest, ADesiredNameTooLongForAShardsPoolNameIsRefused) {
  const std::string longest(kMaxClusterKeyspaceNameSize, 'n');
  Placement p = Plan(ClusterMap(), {1}, {{longest, 2, 1}});
  ASSERT_NE(p.map.Find(longest), nullptr);
  Result<Placement> r =
      PlanPlacement(ClusterMap(), {{1}, {{longest + "n", 2, 1}}, {}});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("at most 57 bytes"), std::string::npos)
      << r.status().message();
}

TEST(PlacementTest, NoKeyspaceIdPastThePoolLimitIsAssigned) {
  // One id below the limit: the last keyspace that fits gets it.
  ClusterMap m =
      ClusterMap::Build(
          {{"a", kMaxClusterKeyspaceId - 1, {{0, 1, {1}, {{0, 1023}}}}}})
          .value();
  Placement p = Plan(m, {1}, {{"b", 1, 1}});
  ASSERT_NE(p.map.Find("b"), nullptr);
  EXPECT_EQ(p.map.Find("b")->id, kMaxClusterKeyspaceId);
  // At the limit: no id is left (ids are never reused), and the map as it
  // was is not touched.
  Result<Placement> r = PlanPlacement(p.map, {{1}, {{"c", 1, 1}}, {}});
  EXPECT_EQ(r.status().code(), StatusCode::kNoSpace);
  EXPECT_NE(r.status().message().find("no keyspace id left for 'c'"),
            std::string::npos)
      << r.status().message();
  // Repairs and keyspaces already placed still plan.
  Placement same = Plan(p.map, {1}, {{"b", 1, 1}});
  EXPECT_FALSE(same.changed());
}

TEST(PlacementTest, EpochAtItsLimitIsNoSpace) {
  ClusterMap m = OneShard({1, 2}, UINT32_MAX);
  EXPECT_EQ(PlanPlacement(m, {{2, 3}, {}, {}}).status().code(),
            StatusCode::kNoSpace);
}

// Random clusters: plan, kill and add nodes, plan again; check the
// invariants after every step.
TEST(PlacementTest, InvariantsHoldOverRandomClusters) {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 200; round++) {
    std::vector<uint32_t> live;
    const uint32_t n = 1 + rng() % 8;
    for (uint32_t i = 0; i < n; i++) live.push_back(1 + rng() % 12);
    std::vector<KeyspaceSpec> want;
    for (int k = 0, nk = 1 + rng() % 3; k < nk; k++) {
      want.push_back({"k" + std::to_string(k), 1 + uint32_t(rng() % 40),
                      1 + uint32_t(rng() % 4)});
    }
    ClusterMap m = Plan(ClusterMap(), live, want).map;
    for (int step = 0; step < 4; step++) {
      // Some nodes die, some join.
      std::vector<uint32_t> next;
      for (uint32_t id : live) {
        if (rng() % 3 != 0) next.push_back(id);
      }
      if (rng() % 2) next.push_back(1 + rng() % 12);
      Placement p = Plan(m, next, want);

      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      auto live_node = [&](uint32_t id) {
        return std::binary_search(next.begin(), next.end(), id);
      };
      for (const KeyspaceShards& ks : p.map.keyspaces()) {
        for (uint32_t slot = 0; slot < kSlotCount; slot++) {
          ASSERT_NE(p.map.ShardFor(ks, uint64_t{slot} << kSlotShift), nullptr);
        }
        const KeyspaceShards* before = m.Find(ks.name);
        for (const Shard& s : ks.shards) {
          const bool unavailable =
              std::find(p.unavailable.begin(), p.unavailable.end(),
                        ShardRef{ks.name, s.id}) != p.unavailable.end();
          for (uint32_t r : s.replicas) {
            if (!unavailable) ASSERT_TRUE(live_node(r)) << r;
          }
          if (before == nullptr) {
            ASSERT_EQ(s.epoch, 1u);
            continue;
          }
          const Shard& old = before->shards.at(s.id);
          ASSERT_EQ(s.epoch, old.epoch + (s.replicas != old.replicas ? 1 : 0));
          // A shard keeps its live replicas in order and gains none.
          std::vector<uint32_t> kept;
          for (uint32_t r : old.replicas) {
            if (live_node(r)) kept.push_back(r);
          }
          if (!unavailable) ASSERT_EQ(s.replicas, kept);
        }
      }
      // Planning again from the result changes nothing.
      Placement again = Plan(p.map, next, want);
      ASSERT_FALSE(again.changed()) << again.changes.at(0);
      ASSERT_EQ(again.map, p.map);
      m = p.map;
      live = next;
    }
  }
}

}  // namespace
}  // namespace kv::cluster
