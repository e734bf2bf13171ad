// kv::cluster::PlanMoves: the live moves the controller starts on its own
// (docs/cluster.md, "The controller"), as one pure function: from the
// map, the live and the draining nodes and the moves in flight, the move
// records to create (phase copy, epoch = the shard's current epoch). No
// etcd, no clock, no randomness: the same input gives the same plan.
//
// A move only ever takes a shard from its primary (the record's source),
// and a node's load is the number of replicas it holds in the map, plus
// the moves in flight towards it, minus those away from it (cancelled
// ones count for neither, but still take their place in flight).
//
// The rules, in this order, while fewer than max_moves records exist in
// the whole cluster (any phase, those of kvadmin included):
//  0. Heal. Every shard of a desired keyspace (request.desired) with fewer
//     replicas than the keyspace wants, no record yet and a live primary
//     gets a join record (move_record.h: the target catches up and joins
//     the replica set as a backup) to the least loaded live node that is
//     not draining and holds no replica of it (none: fewer such nodes
//     than replicas, which placement reports; nothing is said here).
//  1. Drain. For every live draining node (ascending ids), every shard
//     whose primary it is (map order) and that has no move yet moves to
//     the least loaded live node that is not draining and holds no replica
//     of it (ties: fewer primaries, then the lower id). A draining node
//     that is not live keeps its shards (a move needs its source) and is
//     reported; one with nothing left stays drained, nothing to do.
//  2. Rebalance, only when asked: among the live nodes that are not
//     draining, one shard moves from the most loaded (ties: lower id) to
//     the least loaded (ties: lower id) while they differ by 2 or more:
//     the first shard (map order) whose primary is the one, that the
//     other does not hold and that has no move yet.
// Nothing is planned twice: a shard with a record (or a key under moves/
// that does not decode) is never chosen.
//
// Thread-safety: a pure function.
#ifndef KV_CLUSTER_MOVE_PLANNER_H_
#define KV_CLUSTER_MOVE_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/cluster/move_record.h"

namespace kv::cluster {

struct MovePlanRequest {
  std::vector<uint32_t> live;      // registered nodes, any order
  std::vector<uint32_t> draining;  // nodes with a drain key, any order
  std::vector<MoveRecord> moves;   // the records in flight
  // Shards with a key under moves/ that does not decode: in flight too.
  std::vector<ShardRef> unreadable;
  bool rebalance = false;
  uint32_t max_moves = 1;             // records in flight, cluster-wide
  std::vector<KeyspaceSpec> desired;  // rule 0: the replicas each wants
};

struct MovePlan {
  std::vector<MoveRecord> create;     // phase copy, in the order planned
  std::vector<std::string> changes;   // one line per record
  std::vector<std::string> problems;  // what could not be moved, and why
};

MovePlan PlanMoves(const ClusterMap& map, const MovePlanRequest& request);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_MOVE_PLANNER_H_
