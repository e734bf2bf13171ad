// The size a keyspace gets when it is created without a log size — by
// kvserver (a client's create-if-missing with --allow_create) and by
// `kvadmin keyspace create` alike: half of the pool's largest free extent,
// less the keyspace's own index, in whole segments. Half, so that more
// keyspaces fit later (each new one again gets half of what is left); a
// default that took everything left no room for a second keyspace.
#ifndef KV_STORE_KEYSPACE_SIZING_H_
#define KV_STORE_KEYSPACE_SIZING_H_

#include <cstdint>

#include "kv/index_format.h"
#include "kv/store/options.h"
#include "kv/store/pool_format.h"

namespace kv::store {

// The bucket count of an index sized for `index_capacity` keys: the next
// power of two of capacity / 4 (half the slots of a bucket), at least 1.
inline uint64_t BucketCountFor(uint64_t index_capacity) {
  uint64_t buckets = 1;
  while (buckets * 4 < index_capacity) buckets <<= 1;
  return buckets;
}

// Bytes of the index region of `bucket_count` buckets, as the pool lays it
// out: the buckets plus the probe overflow, region-aligned.
inline uint64_t IndexBytes(uint64_t bucket_count) {
  const uint64_t raw =
      index_format::PhysicalBuckets(bucket_count) * index_format::kBucketSize;
  const uint64_t align = pool_format::kRegionAlign;
  return (raw + align - 1) / align * align;
}

// Bytes before the log in a keyspace's region when its index starts sized
// for `index_capacity` keys: the index header page and the initial index
// (which grows over the log's first segments later).
inline uint64_t IndexRegionBytes(uint64_t index_capacity) {
  return index_format::kIndexHeaderBytes +
         IndexBytes(BucketCountFor(index_capacity));
}

// Bytes of the commit log (pool format 4) of a keyspace whose log is
// `log_size` bytes: 1/64 of the log in whole pages, 16 KiB .. 2 MiB
// (512 .. 65,536 entries of 32 bytes; docs/format.md "Commit log").
inline uint64_t CommitLogBytes(uint64_t log_size) {
  constexpr uint64_t kMin = 16 << 10;
  constexpr uint64_t kMax = 2 << 20;
  const uint64_t b =
      log_size / 64 / pool_format::kRegionAlign * pool_format::kRegionAlign;
  return b < kMin ? kMin : b > kMax ? kMax : b;
}

// The smallest log: one segment for writers, plus the two the keyspace
// keeps back (one for deletes on a full keyspace, one for the cleaner).
inline constexpr uint64_t kMinSegments = 3;

// The default log size for a keyspace with `o`'s index capacity and
// segment size, given the pool's largest free extent; 0 when that would
// be under kMinSegments (the smallest log: there is no room).
inline uint64_t DefaultLogSize(uint64_t largest_free,
                               const KeyspaceOptions& o) {
  const uint64_t half = largest_free / 2;
  // The commit log's share is taken at its largest for a log of `half`.
  const uint64_t index = IndexRegionBytes(o.index_capacity) +
                         (o.commit_log ? CommitLogBytes(half) : 0);
  if (half <= index) return 0;
  const uint64_t log = (half - index) / o.segment_size * o.segment_size;
  return log >= kMinSegments * o.segment_size ? log : 0;
}

// The smallest pool that holds one keyspace of `index_capacity` keys and
// `segment_size` segments (and a commit log) with its default log
// (DefaultLogSize: half of the largest free extent, less the index, must hold
// kMinSegments segments). The one rule for kvserver's --pool_size (its default
// keyspace) and kvadmin create's --size.
inline uint64_t MinPoolSizeFor(uint64_t index_capacity, uint64_t segment_size) {
  const uint64_t index = IndexRegionBytes(index_capacity);
  const uint64_t log = kMinSegments * segment_size;
  return pool_format::kDataOffset +
         2 * (index + log + CommitLogBytes(2 * (index + log)));
}

}  // namespace kv::store

#endif  // KV_STORE_KEYSPACE_SIZING_H_
