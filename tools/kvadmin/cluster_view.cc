// ClusterView: decoding the cluster prefix and printing it. Nothing read
// from etcd is trusted (the decoders of kv_cluster check every value);
// what does not decode is shown, never fatal, except the map, whose
// absence of a readable form the caller reports.
#include "cluster_view.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "commands.h"
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

const MoveView* ClusterView::FindMove(std::string_view keyspace,
                                      uint32_t shard) const {
  for (const MoveView& m : moves) {
    if (m.record.keyspace == keyspace && m.record.shard == shard) return &m;
  }
  return nullptr;
}

size_t ClusterView::PrimariesOf(uint32_t node) const {
  size_t n = 0;
  if (!map) return 0;
  for (const KeyspaceShards& ks : map->keyspaces()) {
    for (const Shard& s : ks.shards) n += s.primary() == node;
  }
  return n;
}

namespace {

void AddMove(const cluster::KeyValue& kv, const cluster::EtcdKeys& keys,
             ClusterView* v) {
  Result<cluster::ShardRef> ref = keys.MoveOf(kv.key);
  if (!ref.ok()) {
    v->problems.push_back(ref.status().message());
    return;
  }
  Result<cluster::MoveRecord> r =
      cluster::MoveRecord::Decode(ref->keyspace, ref->shard, kv.value);
  if (!r.ok()) {
    v->unreadable_moves.push_back(*ref);
    v->problems.push_back(kv.key + ": " + r.status().message());
    return;
  }
  v->moves.push_back({std::move(*r), kv.mod_revision, std::nullopt});
}

// Attaches each move's progress (keys under move-progress/, by key).
void AddProgress(const std::map<std::string, std::string>& progress,
                 const cluster::EtcdKeys& keys, ClusterView* v) {
  for (MoveView& m : v->moves) {
    const std::string key =
        keys.move_progress(m.record.keyspace, m.record.shard);
    auto it = progress.find(key);
    if (it == progress.end()) continue;
    Result<cluster::MoveProgress> p = cluster::MoveProgress::Decode(it->second);
    if (p.ok()) {
      m.progress = *p;
    } else {
      v->problems.push_back(key + ": " + p.status().message());
    }
  }
}

}  // namespace

ClusterView MakeClusterView(const cluster::Range& range,
                            const cluster::EtcdKeys& keys,
                            int64_t now_unix_ms) {
  ClusterView v;
  v.revision = range.revision;
  v.now_unix_ms = now_unix_ms;
  std::map<std::string, std::string> progress;
  for (const cluster::KeyValue& kv : range.kvs) {
    if (kv.key == keys.map()) {
      v.map_revision = kv.mod_revision;
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
        v.live_revision[*id] = kv.mod_revision;
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
    } else if (kv.key.starts_with(keys.moves_prefix())) {
      AddMove(kv, keys, &v);
    } else if (kv.key.starts_with(keys.move_progress_prefix())) {
      progress[kv.key] = kv.value;
    } else if (kv.key.starts_with(keys.drain_prefix())) {
      Result<uint32_t> id = keys.DrainNodeOf(kv.key);
      if (id.ok()) {
        v.draining.insert(*id);
      } else {
        v.problems.push_back(id.status().message());
      }
    }
  }
  AddProgress(progress, keys, &v);
  return v;
}

Result<ClusterView> ReadClusterView(cluster::Etcd& etcd,
                                    const cluster::EtcdKeys& keys) {
  Result<cluster::Range> r = etcd.GetPrefix(keys.prefix());
  if (!r.ok()) return r.status();
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  return MakeClusterView(*r, keys, now_ms);
}

int ReportMapUnreadable(const ClusterView& v, const cluster::EtcdKeys& keys,
                        std::ostream& err) {
  err << "kvadmin: the cluster map at " << keys.map()
      << " does not decode: " << v.map_error.ToString()
      << "\n  nodes serve the last good map they read and the controller "
         "will not overwrite it; fix it, or delete it (etcdctl del "
      << keys.map() << ") so that the controller writes a fresh one\n";
  return kExitFailed;
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

std::string RateText(uint64_t bytes_per_s) {
  return bytes_per_s == 0 ? "none" : HumanBytes(bytes_per_s) + "/s";
}

namespace {

std::string AgeText(int64_t now_ms, uint64_t then_ms) {
  if (then_ms > static_cast<uint64_t>(INT64_MAX)) return "in the future";
  const int64_t age = now_ms - static_cast<int64_t>(then_ms);
  if (age < 0) return "in the future";  // clocks differ
  return std::to_string(age / 1000) + " s ago";
}

std::string KeysText(const cluster::MoveProgress& p) {
  std::string s =
      std::to_string(p.keys_copied) + "/" + std::to_string(p.keys_total);
  if (p.keys_total > 0 && p.keys_copied <= p.keys_total) {
    s += " (" + std::to_string(p.keys_copied * 100 / p.keys_total) + "%)";
  }
  return s;
}

}  // namespace

void PrintMoves(const ClusterView& view, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"move", "nodes", "phase", "paused", "rate", "keys", "bytes", "forwarded",
       "updated"}};
  std::vector<std::string> reasons;  // per row, after it
  for (const MoveView& m : view.moves) {
    const cluster::MoveRecord& r = m.record;
    std::vector<std::string> row = {
        r.keyspace + "/" + std::to_string(r.shard),
        std::to_string(r.source) + (r.join ? " +> " : " -> ") +
            std::to_string(r.target),
        std::string(cluster::MovePhaseName(r.phase)), r.paused ? "yes" : "no",
        RateText(r.rate_bytes_per_s)};
    if (m.progress) {
      row.push_back(KeysText(*m.progress));
      row.push_back(HumanBytes(m.progress->bytes_copied));
      row.push_back(std::to_string(m.progress->keys_forwarded));
      row.push_back(AgeText(view.now_unix_ms, m.progress->updated_unix_ms));
    } else {
      row.insert(row.end(), {"-", "-", "-", "no report yet"});
    }
    rows.push_back(std::move(row));
    reasons.push_back(r.reason);
  }
  // PrintTable aligns; the reasons go under their rows.
  std::ostringstream table;
  PrintTable(rows, "    ", table);
  std::istringstream lines(table.str());
  std::string line;
  for (size_t i = 0; std::getline(lines, line); i++) {
    out << line << "\n";
    if (i > 0 && !reasons[i - 1].empty()) {
      out << "      reason: " << reasons[i - 1] << "\n";
    }
  }
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
  if (!view.moves.empty()) {
    out << "moves: " << view.moves.size() << "\n";
    PrintMoves(view, out);
  }
  if (!view.draining.empty()) {
    out << "draining: " << view.draining.size() << "\n";
    for (uint32_t n : view.draining) {
      const size_t left = view.PrimariesOf(n);
      out << "  node " << n << ": "
          << (left == 0 ? std::string("drained (no shards left)")
                        : Plural(left, "shard", "shards") + " left")
          << (view.live.contains(n) ? "" : "; not live") << "\n";
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
