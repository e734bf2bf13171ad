// PlanPlacement: the two rules of placement.h over one working copy of
// the map and one table of per-node load, kept in step as shards change.
#include "kv/cluster/placement.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace kv::cluster {
namespace {

struct Load {
  uint32_t replicas = 0;
  uint32_t primaries = 0;
};

std::string Nodes(const std::vector<uint32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); i++) {
    s += (i ? "," : "") + std::to_string(ids[i]);
  }
  return s + "]";
}

std::string ShardName(const std::string& ks, uint32_t shard) {
  return "keyspace '" + ks + "' shard " + std::to_string(shard);
}

class Planner {
 public:
  Planner(const ClusterMap& current, const std::vector<uint32_t>& live)
      : map_(current) {
    for (uint32_t n : live) load_[n];
    for (const KeyspaceShards& ks : map_.keyspaces()) {
      for (const Shard& s : ks.shards) Count(s.replicas, +1);
    }
  }

  bool IsLive(uint32_t node) const { return load_.contains(node); }
  size_t live_count() const { return load_.size(); }
  const ClusterMap& map() const { return map_; }
  Placement& out() { return out_; }

  // The live node not in `taken` that a new primary (or backup) goes to.
  // 0 when every live node is taken.
  uint32_t Pick(const std::vector<uint32_t>& taken, bool primary) const {
    uint32_t best = 0;
    std::tuple<uint32_t, uint32_t, uint32_t> best_key{};
    for (const auto& [node, l] : load_) {
      if (std::find(taken.begin(), taken.end(), node) != taken.end()) continue;
      auto key = primary ? std::tuple(l.primaries, l.replicas, node)
                         : std::tuple(l.replicas, l.primaries, node);
      if (best == 0 || key < best_key) {
        best = node;
        best_key = key;
      }
    }
    return best;
  }

  // Replaces shard `id`'s replica set (epoch + 1) and logs `why`.
  Status Set(const std::string& ks, const Shard& old,
             std::vector<uint32_t> replicas, const std::string& why) {
    Result<ClusterMap> next = map_.WithReplicas(ks, old.id, replicas);
    if (!next.ok()) return next.status();
    Count(old.replicas, -1);
    Count(replicas, +1);
    out_.changes.push_back(
        ShardName(ks, old.id) + " epoch " + std::to_string(old.epoch) + "->" +
        std::to_string(old.epoch + 1) + ": " + Nodes(old.replicas) + " -> " +
        Nodes(replicas) + " (" + why + ")");
    map_ = std::move(*next);
    return Status::Ok();
  }

  Status Repair(const KeyspaceShards& ks, const Shard& s,
                const std::vector<FailedBackup>& failed) {
    auto reported = [&](uint32_t n) {
      if (n == s.primary()) return false;
      for (const FailedBackup& f : failed) {
        if (f.node == n && f.epoch == s.epoch && f.shard.shard == s.id &&
            f.shard.keyspace == ks.name) {
          return true;
        }
      }
      return false;
    };
    std::vector<uint32_t> kept;
    std::vector<uint32_t> dead;
    std::vector<uint32_t> failing;
    for (uint32_t n : s.replicas) {
      if (!IsLive(n)) {
        dead.push_back(n);
      } else if (reported(n)) {
        failing.push_back(n);
      } else {
        kept.push_back(n);
      }
    }
    if (dead.empty() && failing.empty()) return Status::Ok();
    if (kept.empty()) {
      out_.unavailable.push_back({ks.name, s.id});
      out_.problems.push_back(ShardName(ks.name, s.id) +
                              " is unavailable: no live replica (nodes " +
                              Nodes(s.replicas) + " are dead)");
      return Status::Ok();
    }
    std::string why;
    if (!dead.empty()) why = "dead " + Nodes(dead);
    if (!failing.empty()) {
      why += std::string(why.empty() ? "" : "; ") + "backups " +
             Nodes(failing) + " failed (reported by the primary)";
    }
    if (kept[0] != s.primary()) {
      why += "; node " + std::to_string(kept[0]) + " promoted to primary";
    }
    out_.problems.push_back(
        ShardName(ks.name, s.id) + " runs degraded with " +
        std::to_string(kept.size()) + " of " +
        std::to_string(s.replicas.size()) +
        " replicas: a new backup needs a catch-up copy of the shard");
    return Set(ks.name, s, std::move(kept), why);
  }

  Status Create(const KeyspaceSpec& spec) {
    if (load_.empty()) {
      out_.problems.push_back("keyspace '" + spec.name +
                              "' waits: no live node to place it on");
      return Status::Ok();
    }
    uint32_t max_id = 0;
    for (const KeyspaceShards& ks : map_.keyspaces()) {
      max_id = std::max(max_id, ks.id);
    }
    // Ids are never reused (a dropped keyspace's records may still carry
    // its id), and a shard's pool id is id*1024+shard (kv/cluster_slots.h).
    if (max_id >= kMaxClusterKeyspaceId) {
      return Status::NoSpace("no keyspace id left for '" + spec.name +
                             "': the map already uses id " +
                             std::to_string(max_id) + ", the largest (" +
                             std::to_string(kMaxClusterKeyspaceId) +
                             ") a shard's pool keyspace id allows");
    }
    const uint32_t copies =
        std::min<uint32_t>(spec.replicas, static_cast<uint32_t>(live_count()));
    if (copies < spec.replicas) {
      out_.problems.push_back("keyspace '" + spec.name + "' gets " +
                              std::to_string(copies) + " of " +
                              std::to_string(spec.replicas) +
                              " replicas per shard: not enough live nodes");
    }
    KeyspaceShards ks{spec.name, max_id + 1, {}};
    for (uint32_t i = 0; i < spec.shards; i++) {
      Shard s{i, 1, {}, {EvenSlotRange(i, spec.shards)}};
      for (uint32_t r = 0; r < copies; r++) {
        s.replicas.push_back(Pick(s.replicas, /*primary=*/r == 0));
      }
      Count(s.replicas, +1);
      ks.shards.push_back(std::move(s));
    }
    std::vector<KeyspaceShards> all = map_.keyspaces();
    all.push_back(ks);
    if (all.size() > ClusterMap::kMaxKeyspaces) {
      return Status::NoSpace("the map holds " +
                             std::to_string(ClusterMap::kMaxKeyspaces) +
                             " keyspaces already");
    }
    Result<ClusterMap> next = ClusterMap::Build(std::move(all));
    if (!next.ok()) return next.status();
    map_ = std::move(*next);
    std::string primaries;
    for (const Shard& s : ks.shards)
      primaries += " " + std::to_string(s.primary());
    out_.changes.push_back(
        "create keyspace '" + spec.name + "' id " + std::to_string(ks.id) +
        ": " + std::to_string(spec.shards) + " shards x " +
        std::to_string(copies) + " replicas; primaries on nodes" + primaries);
    return Status::Ok();
  }

  Placement Finish() {
    out_.map = std::move(map_);
    return std::move(out_);
  }

 private:
  void Count(const std::vector<uint32_t>& replicas, int sign) {
    for (size_t i = 0; i < replicas.size(); i++) {
      auto it = load_.find(replicas[i]);
      if (it == load_.end()) continue;  // dead nodes carry no load
      it->second.replicas += sign;
      if (i == 0) it->second.primaries += sign;
    }
  }

  ClusterMap map_;
  std::map<uint32_t, Load> load_;  // live nodes only
  Placement out_;
};

Status CheckRequest(const PlacementRequest& r) {
  for (uint32_t n : r.live_nodes) {
    if (n == 0) return Status::InvalidArgument("live node id 0 is not a node");
  }
  std::set<std::string> names;
  for (const KeyspaceSpec& k : r.desired) {
    KV_RETURN_IF_ERROR(k.Validate());
    if (!names.insert(k.name).second) {
      return Status::InvalidArgument("keyspace '" + k.name +
                                     "' is desired twice");
    }
  }
  return Status::Ok();
}

}  // namespace

std::pair<uint32_t, uint32_t> EvenSlotRange(uint32_t i, uint32_t n) {
  return {i * kSlotCount / n, (i + 1) * kSlotCount / n - 1};
}

Result<Placement> PlanPlacement(const ClusterMap& current,
                                const PlacementRequest& request) {
  KV_RETURN_IF_ERROR(CheckRequest(request));
  Planner p(current, request.live_nodes);
  for (const KeyspaceShards& ks : current.keyspaces()) {
    for (const Shard& s : ks.shards) {
      KV_RETURN_IF_ERROR(p.Repair(ks, s, request.failed));
    }
  }
  for (const KeyspaceSpec& spec : request.desired) {
    const KeyspaceShards* ks = p.map().Find(spec.name);
    if (ks == nullptr) {
      KV_RETURN_IF_ERROR(p.Create(spec));
    } else if (ks->shards.size() != spec.shards) {
      p.out().problems.push_back("keyspace '" + spec.name + "' has " +
                                 std::to_string(ks->shards.size()) +
                                 " shards, " + std::to_string(spec.shards) +
                                 " desired: the controller does not reshard");
    }
  }
  return p.Finish();
}

}  // namespace kv::cluster
