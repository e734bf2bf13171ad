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

namespace kv {

inline constexpr uint32_t kSlotCount = 1024;
inline constexpr int kSlotShift = 16;

constexpr uint32_t SlotOf(uint64_t key_hash) {
  return static_cast<uint32_t>(key_hash >> kSlotShift) & (kSlotCount - 1);
}

static_assert((kSlotCount & (kSlotCount - 1)) == 0, "a power of two");
static_assert(kSlotShift >= 16 &&
                  (uint64_t{kSlotCount} << kSlotShift) <= (uint64_t{1} << 32),
              "slot bits must stay clear of the fingerprint and the bucket");

}  // namespace kv

#endif  // KV_CLUSTER_SLOTS_H_
