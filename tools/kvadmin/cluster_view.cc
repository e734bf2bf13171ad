// ClusterView: decoding the cluster prefix and printing it. Nothing read
// from etcd is trusted (the decoders of kv_cluster check every value);
// what does not decode is shown, never fatal, except the map, whose
// absence of a readable form the caller reports.
#include "cluster_view.h"

#include <algorithm>
#include <set>

#include "kv/cluster/node_registration.h"

namespace kv::kvadmin {
namespace {

using cluster::ClusterMap;
using cluster::KeyspaceShards;
using cluster::KeyspaceSpec;
using cluster::Shard;

// Rows of cells printed left-aligned, columns two spaces apart, each row
// indented by `indent`.
void PrintTable(const std::vector<std::vector<std::string>>& rows,
                const std::string& indent, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size());
    for (size_t i = 0; i < row.size(); i++) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); i++) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string Join(const std::vector<uint32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); i++) {
    s += (i ? "," : "") + std::to_string(ids[i]);
  }
  return s;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// A value from etcd shown in a line: at most 64 bytes, printable only.
std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= ' ' && c <= '~') ? c : '?';
  return s.size() > 64 ? out + "..." : out;
}

}  // namespace

std::vector<KeyspaceSpec> ClusterView::Pending() const {
  std::vector<KeyspaceSpec> out;
  for (const KeyspaceSpec& d : desired) {
    if (!map || map->Find(d.name) == nullptr) out.push_back(d);
  }
  return out;
}

bool ClusterView::Available(const Shard& shard) const {
  return !shard.replicas.empty() && live.contains(shard.primary());
}

ClusterView MakeClusterView(const cluster::Range& range,
                            const cluster::EtcdKeys& keys) {
  ClusterView v;
  v.revision = range.revision;
  for (const cluster::KeyValue& kv : range.kvs) {
    if (kv.key == keys.map()) {
      Result<ClusterMap> m = ClusterMap::Decode(kv.value);
      if (m.ok()) {
        v.map = std::move(*m);
      } else {
        v.map_error = m.status();
      }
    } else if (kv.key == keys.controller()) {
      v.controller = Printable(kv.value);
    } else if (kv.key.starts_with(keys.nodes_prefix())) {
      Result<uint32_t> id = keys.NodeIdOf(kv.key);
      Result<cluster::NodeRegistration> reg =
          cluster::NodeRegistration::Decode(kv.value);
      if (!id.ok()) {
        v.problems.push_back(id.status().message());
      } else if (!reg.ok()) {
        v.problems.push_back(kv.key + ": " + reg.status().message());
      } else if (reg->node_id != *id) {
        v.problems.push_back(kv.key + ": registers node " +
                             std::to_string(reg->node_id));
      } else {
        v.live[*id] = reg->address;
      }
    } else if (kv.key.starts_with(keys.keyspaces_prefix())) {
      Result<std::string> name = keys.KeyspaceNameOf(kv.key);
      if (!name.ok()) {
        v.problems.push_back(name.status().message());
        continue;
      }
      Result<KeyspaceSpec> spec = KeyspaceSpec::Decode(*name, kv.value);
      if (!spec.ok()) {
        v.problems.push_back(kv.key + ": " + spec.status().message());
        continue;
      }
      v.desired.push_back(std::move(*spec));
    }
  }
  return v;
}

std::string SpecText(const KeyspaceSpec& spec) {
  return Plural(spec.shards, "shard", "shards") + " x " +
         Plural(spec.replicas, "replica", "replicas");
}

std::string SlotRanges(const Shard& shard) {
  std::string s;
  for (const auto& [first, last] : shard.slots) {
    if (!s.empty()) s += ",";
    s += std::to_string(first) + "-" + std::to_string(last);
  }
  return s;
}

void PrintShards(const ClusterView& view, const KeyspaceShards& ks,
                 std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"shard", "slots", "epoch", "replicas", "state"}};
  for (const Shard& s : ks.shards) {
    rows.push_back({std::to_string(s.id), SlotRanges(s),
                    std::to_string(s.epoch), Join(s.replicas),
                    view.Available(s)
                        ? "ok"
                        : "unavailable (primary node " +
                              std::to_string(s.primary()) + " is not live)"});
  }
  PrintTable(rows, "    ", out);
}

void PrintClusterStatus(const ClusterView& view, std::ostream& out) {
  out << "controller: "
      << (view.controller.empty() ? "none (no kvserver --cluster is running)"
                                  : "node " + view.controller)
      << "\n";

  // Every registered node, and every node the map names (not registered:
  // not alive).
  std::set<uint32_t> ids;
  for (const auto& [id, address] : view.live) ids.insert(id);
  if (view.map) {
    for (const KeyspaceShards& ks : view.map->keyspaces()) {
      for (const Shard& s : ks.shards) {
        ids.insert(s.replicas.begin(), s.replicas.end());
      }
    }
  }
  out << "nodes: " << ids.size() << " (" << view.live.size() << " alive)\n";
  if (!ids.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"node", "address", "alive", "primaries", "replicas"}};
    for (uint32_t id : ids) {
      size_t primaries = 0, replicas = 0;
      if (view.map) {
        for (const KeyspaceShards& ks : view.map->keyspaces()) {
          for (const Shard& s : ks.shards) {
            primaries += s.primary() == id;
            replicas += std::count(s.replicas.begin(), s.replicas.end(), id);
          }
        }
      }
      auto it = view.live.find(id);
      rows.push_back({std::to_string(id),
                      it == view.live.end() ? "-" : it->second,
                      it == view.live.end() ? "no" : "yes",
                      std::to_string(primaries), std::to_string(replicas)});
    }
    PrintTable(rows, "  ", out);
  }

  if (!view.map) {
    out << "keyspaces: "
        << (view.map_error.ok() ? "none (no map in etcd yet)"
                                : "unknown (the map does not decode)")
        << "\n";
  } else {
    out << "keyspaces: " << view.map->keyspaces().size() << "\n";
    for (const KeyspaceShards& ks : view.map->keyspaces()) {
      size_t unavailable = 0;
      for (const Shard& s : ks.shards) unavailable += !view.Available(s);
      out << "  " << ks.name << ": id " << ks.id << ", "
          << Plural(ks.shards.size(), "shard", "shards");
      if (unavailable > 0) out << ", " << unavailable << " unavailable";
      out << "\n";
      PrintShards(view, ks, out);
    }
  }
  const std::vector<KeyspaceSpec> pending = view.Pending();
  if (!pending.empty()) {
    out << "pending (desired, not in the map yet): " << pending.size() << "\n";
    for (const KeyspaceSpec& p : pending) {
      out << "  " << p.name << ": " << SpecText(p) << "\n";
    }
  }
  if (!view.problems.empty()) {
    out << "problems: " << view.problems.size() << "\n";
    for (const std::string& p : view.problems) out << "  " << p << "\n";
  }
}

}  // namespace kv::kvadmin
