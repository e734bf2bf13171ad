// Cluster slots: which of a keyspace's 1024 slots a key belongs to
// (docs/cluster.md, "Slots and shards"). Header-only, shared by the
// server, the client and the cluster map, so that every side routes a key
// the same way.
//
// The slot comes from key-hash bits that nothing else uses: the index's
// fingerprint is bits 0..15 and its home bucket bits 32.. (index_format.h),
// so bits 16..25 are independent of where a key sits in its shard's index
// and of its fingerprint — a shard's keys still spread over every bucket
// of the shard's own index. Fixed forever: changing it moves every key.
#ifndef KV_CLUSTER_SLOTS_H_
#define KV_CLUSTER_SLOTS_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kv {

inline constexpr uint32_t kSlotCount = 1024;
inline constexpr int kSlotShift = 16;

constexpr uint32_t SlotOf(uint64_t key_hash) {
  return static_cast<uint32_t>(key_hash >> kSlotShift) & (kSlotCount - 1);
}

// A shard of a cluster keyspace is a keyspace of its node's pool, named
// and numbered from the cluster keyspace's name and id and the shard's id
// (docs/cluster.md, "Shards in a pool"). Both forms are injective: the
// name ends in ".s" and the shard id in decimal without leading zeros, so
// the last ".s" splits it back; the id is ks_id * 1024 + shard.
// Every node computes the same name and id, so a shard's records (which
// carry the id under their CRC) are byte-identical wherever it lives.
inline constexpr uint32_t kMaxShardId = kSlotCount - 1;  // ids 0..1023
// ".s1023" is 6 bytes: a cluster keyspace name leaves room for it within
// the 63 bytes of a pool keyspace name (keyspace_name.h).
inline constexpr size_t kMaxClusterKeyspaceNameSize = 57;
// ks_id * 1024 + 1023 must fit a u32 keyspace id.
inline constexpr uint32_t kMaxClusterKeyspaceId = UINT32_MAX / kSlotCount;

// Preconditions: shard <= kMaxShardId; name of at most
// kMaxClusterKeyspaceNameSize bytes.
inline std::string ShardKeyspaceName(std::string_view name, uint32_t shard) {
  std::string s(name);
  s += ".s";
  s += std::to_string(shard);
  return s;
}

// Preconditions: 1 <= ks_id <= kMaxClusterKeyspaceId, shard <= kMaxShardId.
constexpr uint32_t ShardKeyspaceId(uint32_t ks_id, uint32_t shard) {
  return ks_id * kSlotCount + shard;
}

static_assert((kSlotCount & (kSlotCount - 1)) == 0, "a power of two");
static_assert(kSlotShift >= 16 &&
                  (uint64_t{kSlotCount} << kSlotShift) <= (uint64_t{1} << 32),
              "slot bits must stay clear of the fingerprint and the bucket");

}  // namespace kv

#endif  // KV_CLUSTER_SLOTS_H_
