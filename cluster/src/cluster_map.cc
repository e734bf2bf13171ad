// ClusterMap: validation, the slot index, lookups and replica-set changes.
// The JSON form is in cluster_map_json.cc.
#include "kv/cluster/cluster_map.h"

#include <algorithm>
#include <limits>

#include "kv/keyspace_name.h"

namespace kv::cluster {
namespace {

std::string ShardName(const KeyspaceShards& ks, const Shard& s) {
  return "keyspace '" + ks.name + "' shard " + std::to_string(s.id);
}

Status CheckReplicas(const std::vector<uint32_t>& replicas,
                     const std::string& what) {
  if (replicas.empty() || replicas.size() > ClusterMap::kMaxReplicas) {
    return Status::InvalidArgument(
        what + ": 1.." + std::to_string(ClusterMap::kMaxReplicas) +
        " replicas needed, got " + std::to_string(replicas.size()));
  }
  for (size_t i = 0; i < replicas.size(); i++) {
    if (replicas[i] == 0) {
      return Status::InvalidArgument(what + ": node id 0 is not a node");
    }
    for (size_t j = 0; j < i; j++) {
      if (replicas[i] == replicas[j]) {
        return Status::InvalidArgument(what + ": node " +
                                       std::to_string(replicas[i]) +
                                       " holds two replicas");
      }
    }
  }
  return Status::Ok();
}

// Fills `slot_shard` (slot -> shard index) from the shards' ranges: every
// slot exactly once.
Status IndexSlots(const KeyspaceShards& ks,
                  std::array<uint16_t, kSlotCount>* slot_shard) {
  constexpr uint16_t kNone = std::numeric_limits<uint16_t>::max();
  slot_shard->fill(kNone);
  for (size_t i = 0; i < ks.shards.size(); i++) {
    const Shard& s = ks.shards[i];
    if (s.slots.empty()) {
      return Status::InvalidArgument(ShardName(ks, s) + " serves no slots");
    }
    uint32_t next = 0;  // ranges ascend within a shard
    for (const auto& [first, last] : s.slots) {
      if (first > last || last >= kSlotCount || first < next) {
        return Status::InvalidArgument(
            ShardName(ks, s) + ": slot range [" + std::to_string(first) + ", " +
            std::to_string(last) + "] is out of order or outside 0.." +
            std::to_string(kSlotCount - 1));
      }
      for (uint32_t slot = first; slot <= last; slot++) {
        if ((*slot_shard)[slot] != kNone) {
          return Status::InvalidArgument("keyspace '" + ks.name + "': slot " +
                                         std::to_string(slot) +
                                         " is in two shards");
        }
        (*slot_shard)[slot] = static_cast<uint16_t>(i);
      }
      next = last + 1;
    }
  }
  for (uint32_t slot = 0; slot < kSlotCount; slot++) {
    if ((*slot_shard)[slot] == kNone) {
      return Status::InvalidArgument("keyspace '" + ks.name + "': slot " +
                                     std::to_string(slot) + " has no shard");
    }
  }
  return Status::Ok();
}

Status CheckKeyspace(const KeyspaceShards& ks) {
  KV_RETURN_IF_ERROR(ValidateClusterKeyspaceName(ks.name));
  // A shard's pool keyspace id is id*1024+shard (kv/cluster_slots.h).
  if (ks.id == 0 || ks.id > kMaxClusterKeyspaceId) {
    return Status::InvalidArgument("keyspace '" + ks.name + "': id " +
                                   std::to_string(ks.id) + " is outside 1.." +
                                   std::to_string(kMaxClusterKeyspaceId));
  }
  if (ks.shards.empty() || ks.shards.size() > kSlotCount) {
    return Status::InvalidArgument("keyspace '" + ks.name + "': 1.." +
                                   std::to_string(kSlotCount) +
                                   " shards needed");
  }
  for (size_t i = 0; i < ks.shards.size(); i++) {
    const Shard& s = ks.shards[i];
    for (size_t j = 0; j < i; j++) {
      if (ks.shards[j].id == s.id) {
        return Status::InvalidArgument(ShardName(ks, s) + " appears twice");
      }
    }
    if (s.id > kMaxShardId) {
      return Status::InvalidArgument(ShardName(ks, s) + ": shard ids are 0.." +
                                     std::to_string(kMaxShardId));
    }
    if (s.epoch == 0) {
      return Status::InvalidArgument(ShardName(ks, s) + ": epoch 0");
    }
    if (Status st = CheckReplicas(s.replicas, ShardName(ks, s)); !st.ok()) {
      return st;
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateClusterKeyspaceName(std::string_view name) {
  KV_RETURN_IF_ERROR(ValidateKeyspaceName(name));
  // A shard lives in its node's pool as keyspace "<name>.s<shard>"
  // (kv/cluster_slots.h), which must fit the pool's 63 bytes.
  if (name.size() > kMaxClusterKeyspaceNameSize) {
    return Status::InvalidArgument(
        "keyspace '" + std::string(name) +
        "': a cluster keyspace name has at most " +
        std::to_string(kMaxClusterKeyspaceNameSize) +
        " bytes (room for the shard suffix \".s1023\"), got " +
        std::to_string(name.size()));
  }
  return Status::Ok();
}

Result<ClusterMap> ClusterMap::Build(std::vector<KeyspaceShards> keyspaces) {
  if (keyspaces.size() > kMaxKeyspaces) {
    return Status::InvalidArgument(
        "more than " + std::to_string(kMaxKeyspaces) + " keyspaces");
  }
  ClusterMap m;
  m.slot_shard_.resize(keyspaces.size());
  for (size_t i = 0; i < keyspaces.size(); i++) {
    const KeyspaceShards& ks = keyspaces[i];
    if (Status st = CheckKeyspace(ks); !st.ok()) return st;
    for (size_t j = 0; j < i; j++) {
      if (keyspaces[j].name == ks.name || keyspaces[j].id == ks.id) {
        return Status::InvalidArgument(
            "keyspace '" + ks.name + "': its name or id " +
            std::to_string(ks.id) + " is used twice");
      }
    }
    if (Status st = IndexSlots(ks, &m.slot_shard_[i]); !st.ok()) return st;
  }
  m.keyspaces_ = std::move(keyspaces);
  return m;
}

const KeyspaceShards* ClusterMap::Find(std::string_view name) const {
  for (const KeyspaceShards& ks : keyspaces_) {
    if (ks.name == name) return &ks;
  }
  return nullptr;
}

const Shard* ClusterMap::ShardFor(const KeyspaceShards& keyspace,
                                  uint64_t key_hash) const {
  const size_t i = static_cast<size_t>(&keyspace - keyspaces_.data());
  if (i >= keyspaces_.size()) return nullptr;  // not this map's
  return &keyspace.shards[slot_shard_[i][SlotOf(key_hash)]];
}

Result<ClusterMap> ClusterMap::WithReplicas(
    std::string_view keyspace, uint32_t shard_id,
    std::vector<uint32_t> replicas) const {
  std::vector<KeyspaceShards> copy = keyspaces_;
  for (KeyspaceShards& ks : copy) {
    if (ks.name != keyspace) continue;
    for (Shard& s : ks.shards) {
      if (s.id != shard_id) continue;
      if (s.epoch == std::numeric_limits<uint32_t>::max()) {
        return Status::NoSpace(ShardName(ks, s) +
                               ": its epoch cannot grow past 2^32-1");
      }
      if (Status st = CheckReplicas(replicas, ShardName(ks, s)); !st.ok()) {
        return st;
      }
      s.replicas = std::move(replicas);
      s.epoch++;
      return Build(std::move(copy));
    }
    return Status::NotFound("keyspace '" + ks.name + "' has no shard " +
                            std::to_string(shard_id));
  }
  return Status::NotFound("no keyspace '" + std::string(keyspace) +
                          "' in the cluster map");
}

bool ClusterMap::operator==(const ClusterMap& o) const {
  if (keyspaces_.size() != o.keyspaces_.size()) return false;
  for (size_t i = 0; i < keyspaces_.size(); i++) {
    const KeyspaceShards& a = keyspaces_[i];
    const KeyspaceShards& b = o.keyspaces_[i];
    if (a.name != b.name || a.id != b.id ||
        a.shards.size() != b.shards.size()) {
      return false;
    }
    for (size_t j = 0; j < a.shards.size(); j++) {
      const Shard& x = a.shards[j];
      const Shard& y = b.shards[j];
      if (x.id != y.id || x.epoch != y.epoch || x.replicas != y.replicas ||
          x.slots != y.slots) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace kv::cluster
