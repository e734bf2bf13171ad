#include "cluster_status_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace kv::kvadmin {
namespace {

using nlohmann::json;

json Nodes(const ClusterView& v) {
  // As the text: every registered node, every node the map names, and
  // every draining node.
  std::set<uint32_t> ids(v.draining.begin(), v.draining.end());
  for (const auto& [id, address] : v.live) ids.insert(id);
  if (v.map) {
    for (const auto& ks : v.map->keyspaces()) {
      for (const auto& s : ks.shards) {
        ids.insert(s.replicas.begin(), s.replicas.end());
      }
    }
  }
  json nodes = json::array();
  for (uint32_t id : ids) {
    size_t replicas = 0;
    if (v.map) {
      for (const auto& ks : v.map->keyspaces()) {
        for (const auto& s : ks.shards) {
          replicas += std::count(s.replicas.begin(), s.replicas.end(), id);
        }
      }
    }
    auto it = v.live.find(id);
    nodes.push_back(
        {{"id", id},
         {"address", it == v.live.end() ? json() : json(it->second)},
         {"alive", it != v.live.end()},
         {"draining", v.draining.contains(id)},
         {"primaries", v.PrimariesOf(id)},
         {"replicas", replicas}});
  }
  return nodes;
}

json Keyspaces(const ClusterView& v) {
  if (!v.map) return json();
  json out = json::array();
  for (const auto& ks : v.map->keyspaces()) {
    json shards = json::array();
    for (const auto& s : ks.shards) {
      json slots = json::array();
      for (const auto& [first, last] : s.slots) slots.push_back({first, last});
      shards.push_back({{"id", s.id},
                        {"slots", std::move(slots)},
                        {"epoch", s.epoch},
                        {"replicas", s.replicas},
                        {"available", v.Available(s)}});
    }
    out.push_back(
        {{"name", ks.name}, {"id", ks.id}, {"shards", std::move(shards)}});
  }
  return out;
}

json Moves(const ClusterView& v) {
  json out = json::array();
  for (const MoveView& m : v.moves) {
    const cluster::MoveRecord& r = m.record;
    json progress;  // null until the source reports
    if (m.progress) {
      const cluster::MoveProgress& p = *m.progress;
      progress = {
          {"phase", std::string(cluster::MovePhaseName(p.phase))},
          {"keys_copied", p.keys_copied},
          {"keys_total", p.keys_total},
          {"bytes_copied", p.bytes_copied},
          {"keys_forwarded", p.keys_forwarded},
          {"updated_unix_ms", p.updated_unix_ms},
          {"age_ms", v.now_unix_ms - static_cast<int64_t>(std::min<uint64_t>(
                                         p.updated_unix_ms, INT64_MAX))}};
    }
    out.push_back({{"keyspace", r.keyspace},
                   {"shard", r.shard},
                   {"source", r.source},
                   {"target", r.target},
                   {"epoch", r.epoch},
                   {"phase", std::string(cluster::MovePhaseName(r.phase))},
                   {"join", r.join},
                   {"paused", r.paused},
                   {"rate_bytes_per_s", r.rate_bytes_per_s},
                   {"last_sequence", r.last_sequence},
                   {"reason", r.reason},
                   {"progress", std::move(progress)}});
  }
  return out;
}

}  // namespace

std::string ClusterStatusJson(const ClusterView& v,
                              const cluster::EtcdKeys& keys) {
  json pending = json::array();
  for (const auto& p : v.Pending()) {
    pending.push_back(
        {{"name", p.name}, {"shards", p.shards}, {"replicas", p.replicas}});
  }
  json draining = json::array();
  for (uint32_t n : v.draining) {
    draining.push_back({{"node", n},
                        {"primaries_left", v.PrimariesOf(n)},
                        {"alive", v.live.contains(n)}});
  }
  json j = {{"cluster", keys.cluster()},
            {"revision", v.revision},
            {"controller", v.controller.empty() ? json() : json(v.controller)},
            {"nodes", Nodes(v)},
            {"keyspaces", Keyspaces(v)},
            {"pending", std::move(pending)},
            {"moves", Moves(v)},
            {"draining", std::move(draining)},
            {"problems", v.problems}};
  if (!v.map_error.ok()) j["map_error"] = v.map_error.ToString();
  // Problems quote bytes from etcd keys: never let one make dump throw.
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

}  // namespace kv::kvadmin
