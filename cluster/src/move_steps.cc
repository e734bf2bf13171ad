// StepMoves: the per-record rules of move_steps.h, one record at a time.
#include "kv/cluster/move_steps.h"

#include <algorithm>

namespace kv::cluster {
namespace {

std::string Label(const MoveRecord& r) {
  return "move " + r.Name() + " node " + std::to_string(r.source) +
         " -> node " + std::to_string(r.target);
}

MoveStep Step(MoveStep::Kind kind, const MoveEntry& m, std::string reason,
              std::string change) {
  return MoveStep{kind, m, std::move(reason), Label(m.record) + ": " + change};
}

}  // namespace

Status CheckMapHoldsMove(const ClusterMap& map, const MoveRecord& r) {
  const KeyspaceShards* ks = map.Find(r.keyspace);
  if (ks == nullptr) {
    return Status::InvalidArgument("the map has no keyspace '" + r.keyspace +
                                   "'");
  }
  auto s = std::find_if(ks->shards.begin(), ks->shards.end(),
                        [&](const Shard& x) { return x.id == r.shard; });
  if (s == ks->shards.end()) {
    return Status::InvalidArgument("the map has no shard " +
                                   std::to_string(r.shard) + " of '" +
                                   r.keyspace + "'");
  }
  if (s->epoch != r.epoch || s->primary() != r.source) {
    return Status::InvalidArgument(
        "the map moved on: the shard is at epoch " + std::to_string(s->epoch) +
        " with primary node " + std::to_string(s->primary()) +
        ", the move began at epoch " + std::to_string(r.epoch) + " from node " +
        std::to_string(r.source));
  }
  return Status::Ok();
}

Result<ClusterMap> SwitchedMap(const ClusterMap& map, const MoveRecord& r) {
  KV_RETURN_IF_ERROR(CheckMapHoldsMove(map, r));
  const Shard* shard = nullptr;
  for (const Shard& s : map.Find(r.keyspace)->shards) {
    if (s.id == r.shard) shard = &s;
  }
  std::vector<uint32_t> replicas;
  if (r.join) {
    // A join: the target, caught up, becomes the last backup.
    replicas = shard->replicas;
    if (std::find(replicas.begin(), replicas.end(), r.target) !=
        replicas.end()) {
      return Status::InvalidArgument("node " + std::to_string(r.target) +
                                     " holds a replica of the shard already");
    }
    replicas.push_back(r.target);
    return map.WithReplicas(r.keyspace, r.shard, std::move(replicas));
  }
  // The target becomes primary; the backups stay (they received every
  // commit the source acknowledged, as the target did): the target
  // forwards to them from the new epoch on.
  replicas.push_back(r.target);
  for (size_t i = 1; i < shard->replicas.size(); i++) {
    if (shard->replicas[i] != r.target) replicas.push_back(shard->replicas[i]);
  }
  return map.WithReplicas(r.keyspace, r.shard, std::move(replicas));
}

MoveRecord SteppedRecord(const MoveStep& step) {
  MoveRecord r = step.move.record;
  if (step.kind == MoveStep::Kind::kHandoff) r.phase = MovePhase::kHandoff;
  if (step.kind == MoveStep::Kind::kCancel) {
    r.phase = MovePhase::kCancel;
    r.reason = step.reason.substr(0, MoveRecord::kMaxReason);
  }
  return r;
}

MoveSteps StepMoves(const ClusterMap& map, const std::vector<uint32_t>& live,
                    const std::vector<MoveEntry>& moves) {
  auto is_live = [&](uint32_t n) {
    return std::find(live.begin(), live.end(), n) != live.end();
  };
  MoveSteps out;
  for (const MoveEntry& m : moves) {
    const MoveRecord& r = m.record;
    const std::string phase(MovePhaseName(r.phase));
    const Status on_map = CheckMapHoldsMove(map, r);
    if (r.phase == MovePhase::kReleased && r.join &&
        (!is_live(r.target) || !on_map.ok())) {
      // A join's source still holds and serves the shard (frozen): a
      // dead target or a map that moved on just cancels the join.
      const std::string why =
          !is_live(r.target)
              ? "target node " + std::to_string(r.target) + " is not live"
              : on_map.message();
      out.steps.push_back(Step(MoveStep::Kind::kCancel, m, why,
                               phase + " -> cancel (" + why + ")"));
      continue;
    }
    if (r.phase == MovePhase::kReleased) {
      // The source serves nothing of the shard any more and holds nothing
      // the target lacks: only the switch ends this, never a cancel by
      // the controller.
      if (!is_live(r.target)) {
        out.problems.push_back(
            Label(r) + " is released but its target node " +
            std::to_string(r.target) +
            " is not live: the shard is unavailable until that node returns "
            "(or a person runs kvadmin cluster move-cancel --force)");
      } else if (!on_map.ok()) {
        out.problems.push_back(
            Label(r) + " is released but not switched: " + on_map.message() +
            "; left for a person to look at");
      } else {
        out.steps.push_back(Step(
            MoveStep::Kind::kSwitch, m, "",
            std::string(r.join
                            ? "released -> node " + std::to_string(r.target) +
                                  " joins the replica set"
                            : "released -> the map gives it to node " +
                                  std::to_string(r.target)) +
                " at epoch " + std::to_string(r.epoch + 1)));
      }
      continue;
    }
    if (!is_live(r.source)) {
      // Fenced: it will not tear down nor delete, so the controller does.
      const std::string why =
          "source node " + std::to_string(r.source) + " is not live";
      out.steps.push_back(Step(MoveStep::Kind::kDelete, m, why,
                               phase + " -> deleted (" + why + ")"));
      continue;
    }
    if (r.phase == MovePhase::kCancel) continue;  // the source's to finish
    std::string why;
    if (!is_live(r.target)) {
      why = "target node " + std::to_string(r.target) + " is not live";
    } else if (!on_map.ok()) {
      why = on_map.message();
    }
    if (!why.empty()) {
      out.steps.push_back(Step(MoveStep::Kind::kCancel, m, why,
                               phase + " -> cancel (" + why + ")"));
      continue;
    }
    if (r.phase == MovePhase::kReady) {
      out.steps.push_back(
          Step(MoveStep::Kind::kHandoff, m, "", "ready -> handoff"));
    }
  }
  return out;
}

}  // namespace kv::cluster
