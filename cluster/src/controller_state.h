// What one controller pass reads (controller.h): everything under
// /rpkv/<cluster>/ at one revision — the map, the registrations, the
// desired keyspaces, the move records and the drain keys — decoded
// without trusting any of it. A key that does not decode is skipped and
// named in `problems`; it never stops the pass (repairs must go on). The
// map is the exception: one that does not decode leaves `map_error` set,
// and the controller then writes nothing.
//
// Thread-safety: a value and a pure function.
#ifndef KV_CLUSTER_CONTROLLER_STATE_H_
#define KV_CLUSTER_CONTROLLER_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/etcd_types.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/cluster/move_steps.h"
#include "kv/cluster/placement.h"

namespace kv::cluster {

struct ControllerState {
  int64_t revision = 0;  // of the read
  bool has_map = false;
  int64_t map_mod_revision = 0;  // has_map: the guard of a map write
  ClusterMap map;                // empty when there is none
  Status map_error;              // the map's value does not decode
  std::vector<uint32_t> live;    // valid registrations, ascending
  // The options' desired keyspaces, then those of keyspaces/ whose names
  // the options do not have.
  std::vector<KeyspaceSpec> desired;
  std::vector<MoveEntry> moves;  // in key order
  // Shards whose key under moves/ names them but whose value does not
  // decode: nobody may start another move of them.
  std::vector<ShardRef> unreadable_moves;
  std::vector<uint32_t> draining;  // ascending
  // Primaries' reports of failed backups (failed-backups/), and their keys.
  std::vector<FailedBackup> failed_backups;
  std::vector<std::string> failed_backup_keys;
  std::vector<std::string> problems;

  // The guard of a write that depends on the map as read: its mod
  // revision, or its absence.
  Compare MapGuard(const EtcdKeys& keys) const;
};

ControllerState ReadControllerState(const Range& range, const EtcdKeys& keys,
                                    const std::vector<KeyspaceSpec>& desired);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CONTROLLER_STATE_H_
