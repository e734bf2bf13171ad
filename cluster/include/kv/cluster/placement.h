// kv::cluster::PlanPlacement: the controller's map decisions as one pure
// function (docs/cluster.md, "The controller"): from the current map, the
// live nodes and the desired keyspaces, the next map and what changed.
// No etcd, no clock, no randomness: the same input gives the same plan.
//
// It never moves a shard that has live replicas to another node: that
// takes copying its data, which is a live move (move_record.h), planned
// by PlanMoves (move_planner.h) for drains and rebalancing. (An earlier
// rule 3 rebalanced by rewriting replica sets in the map alone, handing a
// node a shard it had no data of; it is gone.)
//
// The rules, applied in this order:
//  1. Repair. A shard with replicas on dead nodes, or backups its
//     primary reported failed at the shard's current epoch
//     (PlacementRequest::failed), drops them (when the primary died, the
//     first live backup becomes primary: the failover decision — every
//     backup holds every acknowledged write, docs/replication.md). Its
//     epoch is bumped once (ClusterMap::WithReplicas). No node is added
//     in their place: a new backup would hold none of the shard's data
//     (one joins by a catch-up copy, not by a map edit); the shard runs
//     degraded and that is reported. A shard with no live replica stays
//     as it is and is reported unavailable.
//  2. Create. A desired keyspace absent from the map gets id max(ids)+1
//     (at most kMaxClusterKeyspaceId, kv/cluster_slots.h),
//     its shards ids 0..n-1 with the 1024 slots split in contiguous, even
//     ranges, and min(replicas, live nodes) replicas on distinct live
//     nodes: primaries on the node with the fewest primaries, backups on
//     the node with the fewest replicas (ties: fewer of the other kind,
//     then the lower node id). Keyspaces in the map but not desired stay.
// A shard changes at most once per plan, so its epoch moves by at most 1.
// Nothing changes when nothing needs to (the map comes back equal, no
// epoch moves, no change lines).
//
// Thread-safety: a pure function.
#ifndef KV_CLUSTER_PLACEMENT_H_
#define KV_CLUSTER_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/status.h"

namespace kv::cluster {

// A primary's report that it could not replicate to a backup
// (etcd failed-backups/), at the map epoch it saw.
struct FailedBackup {
  ShardRef shard;
  uint32_t node = 0;
  uint32_t epoch = 0;
};

struct PlacementRequest {
  std::vector<uint32_t> live_nodes;  // any order; duplicates ignored
  std::vector<KeyspaceSpec> desired;
  // Reports at another epoch than the shard's, or naming its primary or
  // a node not in its replica set, are ignored.
  std::vector<FailedBackup> failed;
};

struct Placement {
  ClusterMap map;
  // What changed, one human-readable line each, in the order applied.
  std::vector<std::string> changes;
  // What could not be done (shards without a live replica, too few live
  // nodes for the replica count, desired shape differing from the map's).
  std::vector<std::string> problems;
  std::vector<ShardRef> unavailable;  // shards with no live replica

  bool changed() const { return !changes.empty(); }
};

// Errors:
//   invalid_argument  node id 0 among the live nodes; a desired keyspace
//                     that KeyspaceSpec::Validate refuses (a bad name or
//                     one longer than kMaxClusterKeyspaceNameSize (57)
//                     bytes, 0 or more than 1024 shards, 0 or more than
//                     kMaxReplicas replicas), or one named twice;
//   no_space          a shard's epoch cannot be bumped (at 2^32-1), or no
//                     keyspace id is left (the map's largest id is
//                     kMaxClusterKeyspaceId already: ids are never
//                     reused), or the map would pass
//                     ClusterMap::kMaxKeyspaces.
Result<Placement> PlanPlacement(const ClusterMap& current,
                                const PlacementRequest& request);

// The slots of shard `i` of `n` (contiguous, sizes differing by at most
// one, together covering 0..1023): [i*1024/n, (i+1)*1024/n - 1].
std::pair<uint32_t, uint32_t> EvenSlotRange(uint32_t i, uint32_t n);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_PLACEMENT_H_
