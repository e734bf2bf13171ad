#include "controller_plan.h"

#include <optional>

#include "kv/cluster/move_planner.h"
#include "kv/cluster/placement.h"

namespace kv::cluster {
namespace {

void Append(std::vector<std::string>* to, const std::vector<std::string>& v) {
  to->insert(to->end(), v.begin(), v.end());
}

// The transaction of one step, or nothing (with a problem) when it cannot
// be written.
std::optional<ControllerWrite> StepWrite(const ControllerState& s,
                                         const EtcdKeys& keys,
                                         const MoveStep& step,
                                         std::vector<std::string>* problems) {
  const MoveRecord& r = step.move.record;
  const std::string key = keys.move(r.keyspace, r.shard);
  const std::string progress = keys.move_progress(r.keyspace, r.shard);
  ControllerWrite w;
  w.compares = {Compare::ModRevisionIs(key, step.move.mod_revision)};
  w.changes = {step.change};
  switch (step.kind) {
    case MoveStep::Kind::kHandoff:
    case MoveStep::Kind::kCancel:
      w.ops = {TxnOp::Put(key, SteppedRecord(step).Encode())};
      break;
    case MoveStep::Kind::kDelete:
      w.ops = {TxnOp::Delete(key), TxnOp::Delete(progress)};
      break;
    case MoveStep::Kind::kSwitch: {
      Result<ClusterMap> next = SwitchedMap(s.map, r);
      if (!next.ok()) {
        problems->push_back(step.change +
                            ": cannot switch: " + next.status().ToString());
        return std::nullopt;
      }
      // The map, the record and its progress change together or not at
      // all: never a map naming the target while the record still says
      // released, nor a deleted record with the map unchanged.
      w.compares.push_back(s.MapGuard(keys));
      w.ops = {TxnOp::Put(keys.map(), next->Encode()), TxnOp::Delete(key),
               TxnOp::Delete(progress)};
      break;
    }
  }
  return w;
}

}  // namespace

ControllerPlan PlanPass(const ControllerState& s, const EtcdKeys& keys,
                        const ControllerPlanOptions& options) {
  ControllerPlan out;
  out.problems = s.problems;
  // Never a rebalance here: PlanPlacement does not move shards with live
  // replicas (that takes their data: PlanMoves below).
  Result<Placement> placement =
      PlanPlacement(s.map, {s.live, s.desired, s.failed_backups});
  if (!placement.ok()) {
    out.placement_error = placement.status();
  } else {
    Append(&out.problems, placement->problems);
    if (placement->changed()) {
      out.writes.push_back({{s.MapGuard(keys)},
                            {TxnOp::Put(keys.map(), placement->map.Encode())},
                            placement->changes});
      return out;
    }
  }
  // Failed-backup reports the map has moved past (another epoch, a shard
  // or node it no longer has): done with, deleted.
  std::vector<TxnOp> stale;
  for (size_t i = 0; i < s.failed_backups.size(); i++) {
    const FailedBackup& f = s.failed_backups[i];
    const KeyspaceShards* ks = s.map.Find(f.shard.keyspace);
    const Shard* shard = nullptr;
    if (ks != nullptr) {
      for (const Shard& x : ks->shards) {
        if (x.id == f.shard.shard) shard = &x;
      }
    }
    if (shard == nullptr || shard->epoch != f.epoch) {
      stale.push_back(TxnOp::Delete(s.failed_backup_keys[i]));
    }
  }
  if (!stale.empty()) {
    out.writes.push_back({{},
                          stale,
                          {"deleted " + std::to_string(stale.size()) +
                           " failed-backup report(s) of older "
                           "epochs"}});
  }

  const MoveSteps steps = StepMoves(s.map, s.live, s.moves);
  Append(&out.problems, steps.problems);
  bool switched = false;
  for (const MoveStep& step : steps.steps) {
    if (step.kind == MoveStep::Kind::kSwitch && switched) continue;  // next
    std::optional<ControllerWrite> w = StepWrite(s, keys, step, &out.problems);
    if (!w) continue;
    switched |= step.kind == MoveStep::Kind::kSwitch;
    out.writes.push_back(std::move(*w));
  }
  if (switched) return out;

  MovePlanRequest req;
  req.live = s.live;
  req.draining = s.draining;
  for (const MoveEntry& m : s.moves) req.moves.push_back(m.record);
  req.unreadable = s.unreadable_moves;
  req.rebalance = options.rebalance;
  req.max_moves = options.max_moves;
  req.desired = s.desired;
  const MovePlan plan = PlanMoves(s.map, req);
  Append(&out.problems, plan.problems);
  for (size_t i = 0; i < plan.create.size(); i++) {
    const MoveRecord& r = plan.create[i];
    const std::string key = keys.move(r.keyspace, r.shard);
    out.writes.push_back({{s.MapGuard(keys), Compare::Absent(key)},
                          {TxnOp::Put(key, r.Encode())},
                          {plan.changes[i]}});
  }
  return out;
}

}  // namespace kv::cluster
