// kv::cluster::ClusterMap — which node serves which part of which keyspace
// (docs/cluster.md, "The map"). The map lives in etcd as one small JSON
// document; every change is an etcd transaction guarded by the revision
// its writer read. This class is its decoded, validated form: a value,
// immutable once built; copy it to change it.
//
// Shape: keyspaces (name, cluster-assigned id) → their 1024 slots
// (kv/cluster_slots.h) in ranges → shards; a shard has an id, an epoch
// (1.., bumped by every change of its replica set) and its replica set,
// the primary first.
//
// The JSON comes from etcd, which anyone with etcd access can write:
// Decode trusts nothing (sizes, ranges, duplicates, every number's bounds)
// and returns corruption naming what is wrong. Unknown object members are
// ignored (a newer writer may add some); a newer "format" is refused.
//
// Thread-safety: a value; const methods may be called concurrently.
#ifndef KV_CLUSTER_CLUSTER_MAP_H_
#define KV_CLUSTER_CLUSTER_MAP_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/cluster_slots.h"
#include "kv/status.h"

namespace kv::cluster {

// OK when `name` can name a cluster keyspace: the pool keyspace rules
// (kv/keyspace_name.h) and at most kMaxClusterKeyspaceNameSize (57) bytes,
// so that "<name>.s1023" still is a pool keyspace name. invalid_argument
// naming the rule otherwise.
Status ValidateClusterKeyspaceName(std::string_view name);

// One shard of a keyspace.
struct Shard {
  uint32_t id = 0;     // 0..kMaxShardId (1023), unique within its keyspace
  uint32_t epoch = 1;  // 1..2^32-1: bumped on every replica-set change
  // Node ids (1..), distinct; replicas[0] is the primary. 1..kMaxReplicas.
  std::vector<uint32_t> replicas;
  // Inclusive slot ranges [first, last], ascending, not overlapping.
  std::vector<std::pair<uint32_t, uint32_t>> slots;

  uint32_t primary() const { return replicas.front(); }
};

// A shard named by its keyspace and id (not necessarily in a map).
struct ShardRef {
  std::string keyspace;
  uint32_t shard = 0;
  bool operator==(const ShardRef&) const = default;
};

struct KeyspaceShards {
  // kv/keyspace_name.h rules, at most kMaxClusterKeyspaceNameSize (57)
  // bytes: a shard lives in its node's pool as "<name>.s<shard id>".
  std::string name;
  // 1..kMaxClusterKeyspaceId: records carry id*1024+shard (cluster_slots.h),
  // equal on every replica.
  uint32_t id = 0;
  std::vector<Shard> shards;
};

class ClusterMap {
 public:
  static constexpr int kFormat = 1;
  static constexpr size_t kMaxReplicas = 8;
  static constexpr size_t kMaxKeyspaces = 4096;
  static constexpr size_t kMaxJsonBytes = 4u << 20;

  ClusterMap() = default;  // empty: no keyspaces

  // Validates and indexes `keyspaces`. invalid_argument naming the first
  // problem: a bad or repeated name or id, a name longer than
  // kMaxClusterKeyspaceNameSize, an id above kMaxClusterKeyspaceId, a
  // shard id above kMaxShardId, a shard without replicas or
  // with repeated or zero node ids, epoch 0, slot ranges out of order,
  // overlapping, out of 0..1023, or not covering every slot exactly once.
  static Result<ClusterMap> Build(std::vector<KeyspaceShards> keyspaces);

  // Parses the JSON etcd holds. corruption for anything but a valid map
  // (the same checks as Build, plus JSON syntax, types and sizes);
  // invalid_argument for a newer format than kFormat.
  static Result<ClusterMap> Decode(std::string_view json);

  // The JSON form (Decode(Encode()) gives an equal map).
  std::string Encode() const;

  const std::vector<KeyspaceShards>& keyspaces() const { return keyspaces_; }

  // The keyspace named `name`, or nullptr.
  const KeyspaceShards* Find(std::string_view name) const;

  // The shard serving slot SlotOf(key_hash) of `keyspace` (never nullptr
  // for a keyspace of a built map: every slot has a shard).
  const Shard* ShardFor(const KeyspaceShards& keyspace,
                        uint64_t key_hash) const;

  // A copy with `keyspace`'s shard `shard_id` served by `replicas`
  // (primary first) and its epoch bumped. not_found for an unknown
  // keyspace or shard; invalid_argument for a bad replica set;
  // no_space when the epoch would pass 2^32-1.
  Result<ClusterMap> WithReplicas(std::string_view keyspace, uint32_t shard_id,
                                  std::vector<uint32_t> replicas) const;

  bool operator==(const ClusterMap& o) const;

 private:
  std::vector<KeyspaceShards> keyspaces_;
  // Per keyspace (same order): slot -> index into its shards.
  std::vector<std::array<uint16_t, kSlotCount>> slot_shard_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CLUSTER_MAP_H_
