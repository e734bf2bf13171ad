// kv::cluster::StepMoves: what the controller does with the move records
// that exist (docs/cluster.md, "The controller", "Moving a shard: the
// protocol"), as one pure function of the map, the live nodes and the
// records. No etcd, no clock: the controller turns each step into one
// transaction guarded by the record's mod revision (and the map's, for a
// switch) and by its election.
//
// Per record, in this order:
//  - its source is not live and it is not released: delete it (and its
//    progress). The source's lease lapsed, so it fenced itself and will
//    never tear down and delete a cancel record itself.
//  - released: the switch when the map still has the shard at the
//    record's epoch with `source` as primary and the target is live;
//    otherwise nothing, and a problem says why (a released shard is
//    frozen on its source: it stays unavailable until the target returns,
//    or a person cancels with `kvadmin cluster move-cancel --force`).
//  - cancel: nothing (the source tears down and deletes it).
//  - copy, ready or handoff whose target is not live: cancel, with the
//    reason; likewise when the map moved on (the shard is gone, at
//    another epoch or has another primary).
//  - ready: hand-off.
//
// Thread-safety: a pure function.
#ifndef KV_CLUSTER_MOVE_STEPS_H_
#define KV_CLUSTER_MOVE_STEPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/move_record.h"

namespace kv::cluster {

// A move record as read from etcd.
struct MoveEntry {
  MoveRecord record;
  int64_t mod_revision = 0;  // the record key's, for the write's guard
};

struct MoveStep {
  enum class Kind {
    kHandoff,  // put the record with phase handoff
    kSwitch,   // the map gives the shard to the target at epoch + 1; the
               // record and its progress are deleted
    kCancel,   // put the record with phase cancel and `reason`
    kDelete,   // delete the record and its progress
  };
  Kind kind = Kind::kHandoff;
  MoveEntry move;      // the record as read
  std::string reason;  // kCancel, kDelete: why (<= MoveRecord::kMaxReason)
  // One line for logs and Controller::Stats, for example "move 'users'/3
  // node 1 -> node 2: ready -> handoff".
  std::string change;
};

struct MoveSteps {
  std::vector<MoveStep> steps;        // at most one per record, in record order
  std::vector<std::string> problems;  // records left as they are, and why
};

// `live`: the registered node ids (any order).
MoveSteps StepMoves(const ClusterMap& map, const std::vector<uint32_t>& live,
                    const std::vector<MoveEntry>& moves);

// The record `step` writes for kHandoff and kCancel (phase and reason
// set); the map a kSwitch writes is SwitchedMap's.
MoveRecord SteppedRecord(const MoveStep& step);

// Ok when `map` has the record's shard at the record's epoch with its
// source as primary; invalid_argument saying what differs otherwise (the
// map moved on: the keyspace or shard is gone, the epoch or the primary
// changed).
Status CheckMapHoldsMove(const ClusterMap& map, const MoveRecord& record);

// The map after the switch of `record`: its shard's replicas the target,
// then the backups it had (but the target), epoch + 1
// (ClusterMap::WithReplicas).
// Errors: those of CheckMapHoldsMove and of WithReplicas.
Result<ClusterMap> SwitchedMap(const ClusterMap& map, const MoveRecord& record);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_MOVE_STEPS_H_
