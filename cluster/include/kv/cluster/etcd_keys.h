// kv::cluster::EtcdKeys: where a cluster's state lives in etcd
// (docs/cluster.md, "Keys in etcd"). Everything of cluster <name> is under
// one prefix:
//
//   /rpkv/<name>/map          the ClusterMap JSON (cluster_map.h)
//   /rpkv/<name>/nodes/<id>   a node's registration, on its lease
//                             (node_registration.h)
//   /rpkv/<name>/controller   the controller election key, on the
//                             controller's lease: its node id in decimal
//   /rpkv/<name>/keyspaces/<keyspace>
//                             a desired keyspace: {"shards":N,"replicas":R}
//                             (keyspace_spec.h); written by kvadmin
//   /rpkv/<name>/moves/<keyspace>/<shard>
//                             a live shard move: MoveRecord JSON
//                             (move_record.h); created by kvadmin or the
//                             controller, advanced by the source node and
//                             the controller
//   /rpkv/<name>/move-progress/<keyspace>/<shard>
//                             the move's MoveProgress JSON, written by the
//                             source on its lease
//   /rpkv/<name>/drain/<id>   node <id> is draining: the controller moves
//                             its shards away and none to it; written by
//                             kvadmin, the value is informational
//
// A cluster name is 1..64 of [a-z0-9_-] (no '/', so one cluster's prefix
// is never inside another's). Node ids are 1..2^32-1 and shard ids
// 0..1023, written in decimal without sign or leading zeros, so each id
// has exactly one key.
//
// Thread-safety: a value; const methods may be called concurrently.
#ifndef KV_CLUSTER_ETCD_KEYS_H_
#define KV_CLUSTER_ETCD_KEYS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/cluster/cluster_map.h"
#include "kv/status.h"

namespace kv::cluster {

// invalid_argument naming the problem unless `name` is 1..64 characters
// of [a-z0-9_-].
Status ValidateClusterName(std::string_view name);

// Parses a node id written in decimal (1..2^32-1, no sign, no leading
// zero). invalid_argument otherwise.
Result<uint32_t> ParseNodeId(std::string_view text);

// Parses a shard id written in decimal (0..kMaxShardId (1023), no sign,
// no leading zero). invalid_argument otherwise.
Result<uint32_t> ParseShardId(std::string_view text);

class EtcdKeys {
 public:
  // Errors: invalid_argument for a bad cluster name.
  static Result<EtcdKeys> ForCluster(std::string_view cluster_name);

  const std::string& cluster() const { return cluster_; }
  // "/rpkv/<name>/": every key of the cluster starts with it.
  const std::string& prefix() const { return prefix_; }
  std::string map() const { return prefix_ + "map"; }
  std::string controller() const { return prefix_ + "controller"; }
  // "/rpkv/<name>/nodes/": what GetPrefix and Watch take for the nodes.
  std::string nodes_prefix() const { return prefix_ + "nodes/"; }
  // "/rpkv/<name>/nodes/<id>". `node_id` must not be 0.
  std::string node(uint32_t node_id) const;

  // "/rpkv/<name>/keyspaces/": the desired keyspaces (keyspace_spec.h).
  std::string keyspaces_prefix() const { return prefix_ + "keyspaces/"; }
  // "/rpkv/<name>/keyspaces/<keyspace>". `keyspace` should pass
  // ValidateClusterKeyspaceName (cluster_map.h); it is not checked here.
  std::string keyspace(std::string_view keyspace) const;

  // The keyspace name of a key under keyspaces_prefix(). Keys come from
  // etcd: invalid_argument for a key outside the prefix, or a name that
  // ValidateClusterKeyspaceName refuses (empty, too long, a '/' or any
  // byte outside [A-Za-z0-9_.-]).
  Result<std::string> KeyspaceNameOf(std::string_view key) const;

  // The node id of a key under nodes_prefix(). Keys come from etcd, which
  // anyone with access can write: invalid_argument for a key outside the
  // prefix, an empty, signed, zero-padded, non-decimal, zero or too large
  // id, or anything after it.
  Result<uint32_t> NodeIdOf(std::string_view key) const;

  // "/rpkv/<name>/moves/": the move records (move_record.h).
  std::string moves_prefix() const { return prefix_ + "moves/"; }
  // "/rpkv/<name>/moves/<keyspace>/<shard>". `keyspace` should pass
  // ValidateClusterKeyspaceName; it is not checked here.
  std::string move(std::string_view keyspace, uint32_t shard) const;
  // "/rpkv/<name>/move-progress/": the source's progress reports.
  std::string move_progress_prefix() const {
    return prefix_ + "move-progress/";
  }
  // "/rpkv/<name>/move-progress/<keyspace>/<shard>".
  std::string move_progress(std::string_view keyspace, uint32_t shard) const;
  // The shard a key under moves_prefix() names. invalid_argument for a key
  // outside the prefix, a keyspace ValidateClusterKeyspaceName refuses, a
  // missing '/', a shard id ParseShardId refuses, or anything after it.
  Result<ShardRef> MoveOf(std::string_view key) const;

  // "/rpkv/<name>/drain/": the nodes asked to drain.
  std::string drain_prefix() const { return prefix_ + "drain/"; }
  // "/rpkv/<name>/drain/<id>". `node_id` must not be 0.
  std::string drain(uint32_t node_id) const;
  // The node id of a key under drain_prefix(); the errors of NodeIdOf.
  Result<uint32_t> DrainNodeOf(std::string_view key) const;

  // "/rpkv/<name>/failed-backups/": a primary's reports of the backups it
  // could not replicate to (replication; the controller drops them from
  // the replica set). The value is the map epoch it saw the failure at.
  std::string failed_backups_prefix() const {
    return prefix_ + "failed-backups/";
  }
  // "/rpkv/<name>/failed-backups/<keyspace>/<shard>/<node>".
  std::string failed_backup(std::string_view keyspace, uint32_t shard,
                            uint32_t node) const;
  struct FailedBackup {
    ShardRef shard;
    uint32_t node = 0;
  };
  // The shard and node a key under failed_backups_prefix() names; the
  // errors of MoveOf for "<keyspace>/<shard>", NodeIdOf's for the node.
  Result<FailedBackup> FailedBackupOf(std::string_view key) const;

 private:
  EtcdKeys(std::string cluster, std::string prefix)
      : cluster_(std::move(cluster)), prefix_(std::move(prefix)) {}

  std::string cluster_;
  std::string prefix_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_KEYS_H_
