// kv::cluster::KeyspaceSpec: a keyspace the cluster should have — its
// name, shard count and replica count (docs/cluster.md, "Desired
// keyspaces"). The controller creates in the map every desired keyspace
// it does not hold yet (placement.h).
//
// Desired keyspaces come from the controller's options and from etcd:
// /rpkv/<cluster>/keyspaces/<name> (etcd_keys.h) holds a small JSON object
//
//   {"shards": 4, "replicas": 1}
//
// (the name is the key's last part, not in the value). Anyone with etcd
// access can write it, so Decode trusts nothing.
//
// Thread-safety: a value.
#ifndef KV_CLUSTER_KEYSPACE_SPEC_H_
#define KV_CLUSTER_KEYSPACE_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/cluster/cluster_map.h"
#include "kv/status.h"

namespace kv::cluster {

struct KeyspaceSpec {
  static constexpr size_t kMaxJsonBytes = 1024;

  std::string name;       // ValidateClusterKeyspaceName (cluster_map.h)
  uint32_t shards = 1;    // 1..1024
  uint32_t replicas = 1;  // 1..ClusterMap::kMaxReplicas

  // invalid_argument naming the problem: a name ValidateClusterKeyspaceName
  // refuses, 0 or more than 1024 shards, 0 or more than kMaxReplicas
  // replicas.
  Status Validate() const;

  // The value stored under keyspaces/<name>: {"replicas":R,"shards":N}.
  // Precondition: Validate() is ok.
  std::string Encode() const;

  // Parses the value of keyspaces/<name>, trusting nothing: corruption
  // naming the problem ("keyspace spec 'users': ...") for a value above
  // kMaxJsonBytes, nested, not a JSON object, "shards" or "replicas"
  // missing, not an unsigned integer or outside its bounds, or a `name`
  // Validate refuses. Unknown members are ignored (a newer writer may add
  // some).
  static Result<KeyspaceSpec> Decode(std::string_view name,
                                     std::string_view json);

  bool operator==(const KeyspaceSpec&) const = default;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_KEYSPACE_SPEC_H_
