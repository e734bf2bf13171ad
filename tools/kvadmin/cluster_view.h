// kvadmin's picture of a cluster: everything under /rpkv/<cluster>/ read
// at one etcd revision (the map, the node registrations, the controller
// key, the desired keyspaces, the moves with their progress, the drain
// keys), decoded without trusting any of it, and its plain-text form for
// `kvadmin cluster status` (docs/cluster.md, "kvadmin cluster"; the JSON
// form is cluster_status_json.h).
//
// Thread-safety: values and pure functions.
#ifndef KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_
#define KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/etcd_types.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/cluster/move_record.h"
#include "kv/status.h"

namespace kv::kvadmin {

// A move record with what its source last reported.
struct MoveView {
  cluster::MoveRecord record;
  int64_t mod_revision = 0;  // of the record key: a writer's guard
  std::optional<cluster::MoveProgress> progress;  // none reported yet
};

struct ClusterView {
  int64_t revision = 0;     // of the read
  int64_t now_unix_ms = 0;  // when it was read (for progress ages)
  // The controller key's value (its node id), empty when none is elected.
  std::string controller;
  // Registered (live) nodes: id -> address, and id -> the mod revision of
  // its registration (a writer's guard that the node is still there).
  std::map<uint32_t, std::string> live;
  std::map<uint32_t, int64_t> live_revision;
  // The map; nullopt when there is none, or when it does not decode
  // (then map_error says why). map_revision: the map key's mod revision.
  std::optional<cluster::ClusterMap> map;
  int64_t map_revision = 0;
  Status map_error;
  // Moves in key order, and the shards whose key under moves/ has a value
  // that does not decode (no new move of them may start).
  std::vector<MoveView> moves;
  std::vector<cluster::ShardRef> unreadable_moves;
  // Nodes with a drain key.
  std::set<uint32_t> draining;
  // Desired keyspaces (keys under keyspaces/) that decode, in key order.
  std::vector<cluster::KeyspaceSpec> desired;
  // Keys that do not decode (registrations, desired keyspaces), one line
  // each saying which and why.
  std::vector<std::string> problems;

  // Desired keyspaces the map does not hold yet.
  std::vector<cluster::KeyspaceSpec> Pending() const;
  // Whether `shard`'s primary is a registered node.
  bool Available(const cluster::Shard& shard) const;
  // The move of `keyspace`/`shard`, or nullptr.
  const MoveView* FindMove(std::string_view keyspace, uint32_t shard) const;
  // The shards whose primary `node` is, in the map.
  size_t PrimariesOf(uint32_t node) const;
};

// Decodes a GetPrefix(keys.prefix()) answer read at `now_unix_ms`. Never
// fails: what does not decode goes to map_error / problems.
ClusterView MakeClusterView(const cluster::Range& range,
                            const cluster::EtcdKeys& keys,
                            int64_t now_unix_ms = 0);

// Reads the cluster prefix (one GetPrefix) now. Errors: etcd's.
Result<ClusterView> ReadClusterView(cluster::Etcd& etcd,
                                    const cluster::EtcdKeys& keys);

// Says on `err` that the map does not decode and how to fix it; returns
// kExitFailed.
int ReportMapUnreadable(const ClusterView& view, const cluster::EtcdKeys& keys,
                        std::ostream& err);

// "4 shards x 1 replica".
std::string SpecText(const cluster::KeyspaceSpec& spec);

// "0-255" or "0-10,20-30".
std::string SlotRanges(const cluster::Shard& shard);

// One keyspace's shards as an aligned table: shard id, slots, epoch,
// replicas (primary first), and "unavailable" when the primary is not a
// live node.
void PrintShards(const ClusterView& view, const cluster::KeyspaceShards& ks,
                 std::ostream& out);

// "10 MiB/s", "none" for 0.
std::string RateText(uint64_t bytes_per_s);

// The moves as an aligned table: keyspace/shard, source -> target,
// phase, paused, rate, keys copied/total, bytes, forwarded, age of the
// last progress report; a cancel's reason under its row.
void PrintMoves(const ClusterView& view, std::ostream& out);

// The whole status: controller, nodes (every registered node and every
// node the map names; alive = registered), keyspaces with their shards,
// pending desired keyspaces, moves, draining nodes, problems.
void PrintClusterStatus(const ClusterView& view, std::ostream& out);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_
