// Options for pools and keyspaces, and the small value types the store API
// returns. Plain structs; thread-safety of values.
#ifndef KV_STORE_OPTIONS_H_
#define KV_STORE_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kv/record_format.h"

namespace kv::store {

struct PoolOptions {
  // Map read-only and never write (no superblock repair, no epoch bump);
  // for kvadmin info/check. Mutating calls return permission_denied.
  bool read_only = false;
  // With read_only: a pool another process holds for writing (kvserver)
  // is opened anyway, without the lock, as a live view — its figures may
  // change while they are read, and nothing about it is repaired
  // (kvadmin info, keyspace list). PoolInfo::live_view_of says so.
  bool live_view = false;
  // How long a segment freed by an update or the cleaner stays unused, so
  // in-flight remote readers of its old records see them intact or detect
  // the reuse by CRC/key/sequence mismatch and retry.
  std::chrono::milliseconds grace_period{1000};
};

struct KeyspaceOptions {
  // The index's initial size hint, in keys: buckets = next power of two of
  // capacity / 4, at least 1. The index doubles online as keys arrive
  // (growing into the keyspace's log), so this only saves the first few
  // doublings; the keyspace's capacity is bounded by its log.
  uint64_t index_capacity = 65536;
  // Segment size in bytes: a multiple of 4096, 4 KiB .. 1 GiB, and able to
  // hold a record of the largest key and value.
  uint32_t segment_size = 4u << 20;
  // Log size in bytes (rounded down to whole segments); 0 = the largest
  // free extent of the pool.
  uint64_t log_size = 0;
  // Largest value accepted, up to record_format::kMaxValueSize.
  uint32_t max_value_size = record_format::kDefaultMaxValueSize;
  // The keyspace id its records carry (covered by their CRC). 0: the pool
  // picks one above every id it has used. Non-zero: exactly this one — a
  // cluster assigns it, so that a shard's records are byte-identical on
  // every replica; no other live keyspace of the pool may have it.
  uint32_t id = 0;
  // A commit log (pool format 4; docs/format.md "Commit log"): on a
  // page-granularity pool a commit persists its record and a 32-byte
  // entry next to it instead of its index pages. Off: the keyspace
  // commits as format 3 did.
  bool commit_log = true;
};

// What ListKeyspaces() reports of a keyspace (from its catalog entry).
struct KeyspaceInfo {
  std::string name;
  uint32_t id = 0;
  uint64_t region_offset = 0;
  uint64_t region_size = 0;
  // Absolute, in the pool: the index header page is at region_offset.
  uint64_t index_offset = 0;
  uint64_t bucket_count = 0;  // now (the index grows)
  uint64_t log_offset = 0;
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
  // Format 4: the commit log's ring (absolute offset), 0 and 0 for none.
  uint64_t commit_log_offset = 0;
  uint64_t commit_log_entries = 0;
};

struct KeyspaceStats {
  // Keys holding an index slot. An expired key counts until the cleaner's
  // expiry sweep (Keyspace::ReclaimExpired) clears its slot, as Redis's
  // DBSIZE counts expired keys not yet evicted.
  uint64_t keys = 0;
  uint64_t live_bytes = 0;  // bytes of records that slots point to
  // Bytes the cleaner can win back: records no longer live, and the
  // unused rest of sealed segments.
  uint64_t dead_bytes = 0;
  uint32_t segments = 0;
  uint32_t free_segments = 0;
  uint32_t open_segments = 0;  // granted to a writer
  uint32_t sealed_segments = 0;
  uint32_t quarantined_segments = 0;  // freed, waiting out the grace period
  // Capacity: the log's size and the bytes of its segments that are not
  // free (open, sealed or quarantined: what a writer cannot be granted
  // until the cleaner frees it), and the index's slots and those holding
  // a key (= keys: a key holds one slot, two for a moment while it is
  // updated). A put can fail with no_space before every slot is used: a
  // key's slot must be in one of its two home buckets.
  uint64_t log_bytes = 0;
  uint64_t log_bytes_used = 0;
  uint64_t index_slots = 0;
  uint64_t index_slots_used = 0;
  // The index's geometry: it doubles online (docs/format.md, "Index
  // growth") when index_slots_used passes kGrowLoad of index_slots or a
  // key's neighbourhood is full. Load factor = index_slots_used /
  // index_slots.
  uint64_t index_buckets = 0;     // bucket_count (a power of two)
  uint64_t index_growths = 0;     // doublings since the keyspace was made
  uint64_t index_generation = 0;  // growths + 1: what the header publishes
};

// What Check() found; ok() when no problem was found.
struct CheckReport {
  std::vector<std::string> problems;
  // Not problems: leftovers of an unclean shutdown that the next writable
  // open repairs (reported by read-only checks).
  std::vector<std::string> notes;
  uint64_t keyspaces = 0;
  uint64_t slots = 0;
  uint64_t records_verified = 0;
  bool ok() const { return problems.empty(); }
};

}  // namespace kv::store

#endif  // KV_STORE_OPTIONS_H_
