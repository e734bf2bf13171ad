// kvadmin's picture of a cluster: everything under /rpkv/<cluster>/ read
// at one etcd revision (the map, the node registrations, the controller
// key, the desired keyspaces), decoded without trusting any of it, and
// its plain-text form for `kvadmin cluster status` (docs/cluster.md,
// "kvadmin cluster").
//
// Thread-safety: values and pure functions.
#ifndef KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_
#define KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/etcd_types.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/status.h"

namespace kv::kvadmin {

struct ClusterView {
  int64_t revision = 0;  // of the read
  // The controller key's value (its node id), empty when none is elected.
  std::string controller;
  // Registered (live) nodes: id -> address.
  std::map<uint32_t, std::string> live;
  // The map; nullopt when there is none, or when it does not decode
  // (then map_error says why).
  std::optional<cluster::ClusterMap> map;
  Status map_error;
  // Desired keyspaces (keys under keyspaces/) that decode, in key order.
  std::vector<cluster::KeyspaceSpec> desired;
  // Keys that do not decode (registrations, desired keyspaces), one line
  // each saying which and why.
  std::vector<std::string> problems;

  // Desired keyspaces the map does not hold yet.
  std::vector<cluster::KeyspaceSpec> Pending() const;
  // Whether `shard`'s primary is a registered node.
  bool Available(const cluster::Shard& shard) const;
};

// Decodes a GetPrefix(keys.prefix()) answer. Never fails: what does not
// decode goes to map_error / problems.
ClusterView MakeClusterView(const cluster::Range& range,
                            const cluster::EtcdKeys& keys);

// "4 shards x 1 replica".
std::string SpecText(const cluster::KeyspaceSpec& spec);

// "0-255" or "0-10,20-30".
std::string SlotRanges(const cluster::Shard& shard);

// One keyspace's shards as an aligned table: shard id, slots, epoch,
// replicas (primary first), and "unavailable" when the primary is not a
// live node.
void PrintShards(const ClusterView& view, const cluster::KeyspaceShards& ks,
                 std::ostream& out);

// The whole status: controller, nodes (every registered node and every
// node the map names; alive = registered), keyspaces with their shards,
// pending desired keyspaces, problems.
void PrintClusterStatus(const ClusterView& view, std::ostream& out);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_CLUSTER_VIEW_H_
