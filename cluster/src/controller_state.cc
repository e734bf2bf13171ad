#include "controller_state.h"

#include <algorithm>
#include <charconv>

#include "kv/cluster/node_registration.h"

namespace kv::cluster {
namespace {

// Adds the desired keyspace of `kv` (a key under keyspaces/) unless one of
// that name is there already (the options win: they come from the
// operator of this process; etcd's keys are sorted, so names are already
// unique among them).
void AddDesired(const KeyValue& kv, const EtcdKeys& keys, ControllerState* s) {
  Result<std::string> name = keys.KeyspaceNameOf(kv.key);
  if (!name.ok()) {
    s->problems.push_back("ignoring desired keyspace: " +
                          name.status().message());
    return;
  }
  Result<KeyspaceSpec> spec = KeyspaceSpec::Decode(*name, kv.value);
  if (!spec.ok()) {
    s->problems.push_back("ignoring " + kv.key + ": " +
                          spec.status().message() +
                          "; fix or delete it with etcdctl");
    return;
  }
  for (const KeyspaceSpec& d : s->desired) {
    if (d.name == spec->name) return;
  }
  s->desired.push_back(std::move(*spec));
}

void AddNode(const KeyValue& kv, const EtcdKeys& keys, ControllerState* s) {
  Result<uint32_t> id = keys.NodeIdOf(kv.key);
  Result<NodeRegistration> reg = NodeRegistration::Decode(kv.value);
  if (!id.ok() || !reg.ok() || reg->node_id != *id) {
    s->problems.push_back("ignoring " + kv.key +
                          ": not a valid registration of that node id");
    return;
  }
  s->live.push_back(*id);
}

void AddMove(const KeyValue& kv, const EtcdKeys& keys, ControllerState* s) {
  Result<ShardRef> ref = keys.MoveOf(kv.key);
  if (!ref.ok()) {
    s->problems.push_back("ignoring move: " + ref.status().message());
    return;
  }
  Result<MoveRecord> r =
      MoveRecord::Decode(ref->keyspace, ref->shard, kv.value);
  if (!r.ok()) {
    // Never overwritten by the controller, and no other move of that
    // shard starts while it is there: a person must look.
    s->unreadable_moves.push_back(*ref);
    s->problems.push_back("ignoring " + kv.key + ": " + r.status().message() +
                          "; fix or delete it with etcdctl");
    return;
  }
  s->moves.push_back({std::move(*r), kv.mod_revision});
}

void AddDrain(const KeyValue& kv, const EtcdKeys& keys, ControllerState* s) {
  // The value is informational: the key's presence is the request.
  Result<uint32_t> id = keys.DrainNodeOf(kv.key);
  if (!id.ok()) {
    s->problems.push_back("ignoring drain key: " + id.status().message());
    return;
  }
  s->draining.push_back(*id);
}

// A primary's report: the key names shard and node, the value the epoch.
void AddFailedBackup(const KeyValue& kv, const EtcdKeys& keys,
                     ControllerState* s) {
  Result<EtcdKeys::FailedBackup> f = keys.FailedBackupOf(kv.key);
  uint32_t epoch = 0;
  const char* end = kv.value.data() + kv.value.size();
  auto [p, ec] = std::from_chars(kv.value.data(), end, epoch);
  if (!f.ok() || ec != std::errc() || p != end || epoch == 0) {
    s->problems.push_back("ignoring " + kv.key +
                          ": not a failed-backup report (the key names "
                          "<keyspace>/<shard>/<node>, the value an epoch)");
    return;
  }
  s->failed_backups.push_back({f->shard, f->node, epoch});
  s->failed_backup_keys.push_back(kv.key);
}

}  // namespace

Compare ControllerState::MapGuard(const EtcdKeys& keys) const {
  return has_map ? Compare::ModRevisionIs(keys.map(), map_mod_revision)
                 : Compare::Absent(keys.map());
}

ControllerState ReadControllerState(const Range& range, const EtcdKeys& keys,
                                    const std::vector<KeyspaceSpec>& desired) {
  ControllerState s;
  s.revision = range.revision;
  s.desired = desired;
  const std::string map_key = keys.map();
  for (const KeyValue& kv : range.kvs) {
    if (kv.key == map_key) {
      s.has_map = true;
      s.map_mod_revision = kv.mod_revision;
      Result<ClusterMap> m = ClusterMap::Decode(kv.value);
      if (m.ok()) {
        s.map = std::move(*m);
      } else {
        s.map_error = m.status();
      }
    } else if (kv.key.starts_with(keys.keyspaces_prefix())) {
      AddDesired(kv, keys, &s);
    } else if (kv.key.starts_with(keys.nodes_prefix())) {
      AddNode(kv, keys, &s);
    } else if (kv.key.starts_with(keys.moves_prefix())) {
      AddMove(kv, keys, &s);
    } else if (kv.key.starts_with(keys.drain_prefix())) {
      AddDrain(kv, keys, &s);
    } else if (kv.key.starts_with(keys.failed_backups_prefix())) {
      AddFailedBackup(kv, keys, &s);
    }
  }
  // Keys sort as text ("nodes/10" before "nodes/2"): order the ids.
  std::sort(s.live.begin(), s.live.end());
  std::sort(s.draining.begin(), s.draining.end());
  return s;
}

}  // namespace kv::cluster
