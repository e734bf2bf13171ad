// PlanMoves: drain, then rebalance (move_planner.h), over one table of
// projected per-node load kept in step as moves are planned.
#include "kv/cluster/move_planner.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace kv::cluster {
namespace {

struct Load {
  int replicas = 0;  // projected: moves in flight and planned included
  int primaries = 0;
};

class MovePlanner {
 public:
  MovePlanner(const ClusterMap& map, const MovePlanRequest& req)
      : map_(map),
        req_(req),
        draining_(req.draining.begin(), req.draining.end()),
        in_flight_(req.moves.size() + req.unreadable.size()) {
    for (uint32_t n : req.live) load_[n];
    for (const KeyspaceShards& ks : map_.keyspaces()) {
      for (const Shard& s : ks.shards) {
        for (size_t i = 0; i < s.replicas.size(); i++) {
          Add(s.replicas[i], +1, i == 0);
        }
      }
    }
    for (const MoveRecord& r : req.moves) {
      busy_.insert({r.keyspace, r.shard});
      if (r.phase == MovePhase::kCancel) continue;  // going nowhere
      if (r.join) {
        Add(r.target, +1, false);  // a backup more; the source stays
        continue;
      }
      Add(r.source, -1, true);
      Add(r.target, +1, true);
    }
    for (const ShardRef& s : req.unreadable)
      busy_.insert({s.keyspace, s.shard});
  }

  bool Full() const { return in_flight_ >= req_.max_moves; }
  bool IsLive(uint32_t n) const { return load_.contains(n); }
  MovePlan& out() { return out_; }

  void Drain(uint32_t node) {
    for (const KeyspaceShards& ks : map_.keyspaces()) {
      for (const Shard& s : ks.shards) {
        if (s.primary() != node) continue;
        if (!IsLive(node)) {
          out_.problems.push_back("node " + std::to_string(node) +
                                  " is draining but not live: its shards "
                                  "wait for it (a move needs its source)");
          return;
        }
        if (Full()) return;
        if (busy_.contains({ks.name, s.id})) continue;
        const uint32_t to = LeastLoaded(s);
        if (to == 0) {
          out_.problems.push_back(
              "keyspace '" + ks.name + "' shard " + std::to_string(s.id) +
              " of draining node " + std::to_string(node) +
              " has nowhere to go: no live node that is not draining and "
              "holds no replica of it");
          continue;
        }
        Plan(ks, s, to, "drain node " + std::to_string(node));
      }
    }
  }

  // Rule 0: a shard of a desired keyspace with fewer replicas than it
  // wants (a backup died and was dropped) gets a new one by a join.
  void Heal(const KeyspaceSpec& spec) {
    const KeyspaceShards* ks = map_.Find(spec.name);
    if (ks == nullptr) return;
    for (const Shard& s : ks->shards) {
      if (s.replicas.size() >= spec.replicas) continue;
      if (Full()) return;
      if (busy_.contains({ks->name, s.id})) continue;
      if (!IsLive(s.primary())) continue;  // a join needs its source
      // No candidate means fewer live, non-draining nodes than the
      // keyspace wants replicas (each replica is on a distinct node):
      // placement reported that when it placed the keyspace, and a
      // problem line per shard and pass would say nothing new.
      const uint32_t to = LeastLoaded(s);
      if (to == 0) continue;
      Plan(*ks, s, to,
           "a new backup: " + std::to_string(s.replicas.size()) + " of " +
               std::to_string(spec.replicas) + " replicas",
           /*join=*/true);
    }
  }

  // One move of the rebalance rule; false when balanced or stuck.
  bool RebalanceOne() {
    uint32_t most = 0, least = 0;
    for (const auto& [n, l] : load_) {  // ascending ids: ties -> lower
      if (draining_.contains(n)) continue;
      if (most == 0 || l.replicas > load_.at(most).replicas) most = n;
      if (least == 0 || l.replicas < load_.at(least).replicas) least = n;
    }
    if (most == 0 || load_.at(most).replicas < load_.at(least).replicas + 2) {
      return false;
    }
    for (const KeyspaceShards& ks : map_.keyspaces()) {
      for (const Shard& s : ks.shards) {
        if (s.primary() != most || Holds(s, least) ||
            busy_.contains({ks.name, s.id})) {
          continue;
        }
        Plan(ks, s, least, "rebalance");
        return true;
      }
    }
    return false;
  }

 private:
  void Add(uint32_t node, int sign, bool primary) {
    auto it = load_.find(node);
    if (it == load_.end()) return;  // dead nodes carry no load
    it->second.replicas += sign;
    if (primary) it->second.primaries += sign;
  }

  static bool Holds(const Shard& s, uint32_t node) {
    return std::find(s.replicas.begin(), s.replicas.end(), node) !=
           s.replicas.end();
  }

  // The live, not draining node that holds no replica of `s` with the
  // least load; 0 when there is none.
  uint32_t LeastLoaded(const Shard& s) const {
    uint32_t best = 0;
    std::tuple<int, int, uint32_t> best_key{};
    for (const auto& [n, l] : load_) {
      if (draining_.contains(n) || Holds(s, n)) continue;
      const auto key = std::tuple(l.replicas, l.primaries, n);
      if (best == 0 || key < best_key) {
        best = n;
        best_key = key;
      }
    }
    return best;
  }

  void Plan(const KeyspaceShards& ks, const Shard& s, uint32_t to,
            const std::string& why, bool join = false) {
    MoveRecord r;
    r.keyspace = ks.name;
    r.shard = s.id;
    r.source = s.primary();
    r.target = to;
    r.epoch = s.epoch;
    r.phase = MovePhase::kCopy;
    r.join = join;
    busy_.insert({ks.name, s.id});
    in_flight_++;
    if (join) {
      Add(r.target, +1, false);
    } else {
      Add(r.source, -1, true);
      Add(r.target, +1, true);
    }
    out_.changes.push_back(std::string(join ? "start join " : "start move ") +
                           r.Name() + " node " + std::to_string(r.source) +
                           " -> node " + std::to_string(to) + " at epoch " +
                           std::to_string(r.epoch) + " (" + why + ")");
    out_.create.push_back(std::move(r));
  }

  const ClusterMap& map_;
  const MovePlanRequest& req_;
  const std::set<uint32_t> draining_;
  std::map<uint32_t, Load> load_;                    // live nodes only
  std::set<std::pair<std::string, uint32_t>> busy_;  // shards with a move
  size_t in_flight_;
  MovePlan out_;
};

}  // namespace

MovePlan PlanMoves(const ClusterMap& map, const MovePlanRequest& request) {
  MovePlanner p(map, request);
  const std::set<uint32_t> draining(request.draining.begin(),
                                    request.draining.end());
  for (const KeyspaceSpec& spec : request.desired) p.Heal(spec);
  for (uint32_t node : draining) p.Drain(node);
  while (request.rebalance && !p.Full() && p.RebalanceOne()) {
  }
  return std::move(p.out());
}

}  // namespace kv::cluster
