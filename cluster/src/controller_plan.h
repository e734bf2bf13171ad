// One controller pass's decisions (controller.h) as a pure function of
// what it read (controller_state.h): the etcd transactions to make, in
// order, each with the guards it needs besides the election's.
//
//  1. The map (placement.h: repair, create). When it changes, that write
//     is the pass's only one: the moves are decided on the new map, in
//     the next pass.
//  2. The steps of the move records (move_steps.h), each guarded by the
//     record's mod revision as read; a switch also by the map's. At most
//     one switch per pass (it changes the map the others were checked
//     against); when there was one, no move starts in this pass.
//  3. The moves to start (move_planner.h: drain, rebalance), each guarded
//     by the map's revision and the record key's absence.
//
// Thread-safety: a pure function.
#ifndef KV_CLUSTER_CONTROLLER_PLAN_H_
#define KV_CLUSTER_CONTROLLER_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "controller_state.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/etcd_types.h"
#include "kv/status.h"

namespace kv::cluster {

struct ControllerWrite {
  std::vector<Compare> compares;  // the election guard is added on writing
  std::vector<TxnOp> ops;
  std::vector<std::string> changes;  // for logs and Controller::Stats
};

struct ControllerPlan {
  std::vector<ControllerWrite> writes;
  std::vector<std::string> problems;  // of the state, placement and moves
  // PlanPlacement's error (placement.h): the map is not written, but the
  // moves still are (a released shard must not wait on, say, a desired
  // keyspace that gets no id).
  Status placement_error;
};

struct ControllerPlanOptions {
  bool rebalance = false;
  uint32_t max_moves = 1;
};

// Precondition: state.map_error is ok (a map that does not decode is
// never replaced).
ControllerPlan PlanPass(const ControllerState& state, const EtcdKeys& keys,
                        const ControllerPlanOptions& options);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CONTROLLER_PLAN_H_
