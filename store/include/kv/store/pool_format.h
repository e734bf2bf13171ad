// Pool-level on-media structures: the superblock (two copies) and the
// keyspace catalog. Only the store reads these (clients learn the keyspace
// geometry from the server), so they live with the store rather than in the
// client-shared kv/ headers. Prose twin: docs/format.md.
//
// Layout of a pool (all offsets absolute, little-endian):
//   [0, 4096)        superblock copy A
//   [4096, 8192)     superblock copy B
//   [8192, 40960)    catalog: kCatalogSlots slots x 2 copies x 256 bytes
//   [65536, size)    data area: keyspace regions (index header page,
//                    index, log, then the commit log; a growing index
//                    extends over the log's first segments)
#ifndef KV_STORE_POOL_FORMAT_H_
#define KV_STORE_POOL_FORMAT_H_

#include <cstddef>
#include <cstdint>

namespace kv::store::pool_format {

inline constexpr char kMagic[8] = {'R', 'P', 'K', 'V', 'P', 'O', 'O', 'L'};
// 2: the index grows online (index header page, index_generation).
// 3: records may carry an expiry (record_format.h kFlagExpires). A format
//    2 pool is upgraded in place at its first writable open (its records
//    never carry the flag; only the version word changes), so that a
//    release that knows no expiry refuses it rather than a record.
// 4: a keyspace may have a commit log (CatalogEntry::commit_log_*; the
//    index header page holds its checkpoint). Older pools are upgraded in
//    place the same way: their keyspaces have none and keep committing as
//    before; a release that knows no commit log must not open a pool whose
//    keyspaces need a replay of one.
inline constexpr uint32_t kFormatVersion = 4;
// The oldest format this build opens (1 has no index header page).
inline constexpr uint32_t kMinFormatVersion = 2;
inline constexpr uint64_t kSuperblockOffset[2] = {0, 4096};
inline constexpr uint64_t kCatalogOffset = 8192;
inline constexpr uint32_t kCatalogSlots = 64;
inline constexpr uint64_t kCatalogEntrySize = 256;
inline constexpr uint64_t kDataOffset = 65536;
inline constexpr uint64_t kRegionAlign = 4096;
inline constexpr uint64_t kMinPoolSize = 1ull << 20;
inline constexpr uint64_t kMaxPoolSize = 1ull << 50;

// Written once by Create (copy A, persist, copy B, persist); never updated.
struct Superblock {
  char magic[8];
  uint32_t format_version;
  uint32_t incompat_flags;  // must be 0 for this version
  uint8_t uuid[16];
  uint64_t pool_size;
  uint64_t catalog_offset;
  uint32_t catalog_slots;
  uint32_t reserved0;
  uint64_t data_offset;
  uint64_t created_unix_seconds;
  uint8_t reserved[52];
  uint32_t crc;  // CRC32C of the 124 bytes before it
};
static_assert(sizeof(Superblock) == 128);

enum class KeyspaceState : uint32_t { kFree = 0, kLive = 1, kDropped = 2 };
inline constexpr uint32_t kCatalogMagic = 0x4b53504b;  // "KPSK"

// One copy of a catalog slot. A slot has two copies; the valid copy (magic,
// CRC) with the higher generation is current. An update writes the other
// copy with generation + 1 and persists it — that persist is the commit
// point of create/drop/epoch bump; a torn write leaves the old copy current.
struct CatalogEntry {
  uint32_t crc;  // CRC32C of bytes [4, 256)
  uint32_t magic;
  uint64_t generation;
  uint32_t state;  // KeyspaceState
  uint32_t keyspace_id;
  char name[64];  // 1..63 bytes, NUL-padded
  uint64_t region_offset;
  uint64_t region_size;
  uint64_t index_offset;  // region_offset + kIndexHeaderBytes
  // Power of two; PhysicalBuckets() are on media. Doubles with each index
  // growth (the entry update is the growth's commit point).
  uint64_t bucket_count;
  uint64_t log_offset;
  uint64_t log_size;  // multiple of segment_size
  uint32_t segment_size;
  uint32_t max_value_size;
  uint64_t open_epoch;  // bumped by every writable open; seeds sequences
  // open_epoch of the last writable open that closed cleanly (index fully
  // persisted); != open_epoch means recovery must repair (Keyspace::Recover).
  uint64_t clean_epoch;
  // 1 at create, +1 per index growth (the index header publishes it).
  uint64_t index_generation;
  // Format 4: the commit log (docs/format.md "Commit log"): a ring of
  // commit_log_entries 32-byte entries at commit_log_offset (absolute),
  // right after the log. 0 and 0: none (keyspaces of older formats).
  uint64_t commit_log_offset;
  uint64_t commit_log_entries;
  uint8_t reserved[72];
};
static_assert(sizeof(CatalogEntry) == kCatalogEntrySize);

constexpr uint64_t CatalogCopyOffset(uint32_t slot, int copy) {
  return kCatalogOffset + (uint64_t{slot} * 2 + copy) * kCatalogEntrySize;
}

}  // namespace kv::store::pool_format

#endif  // KV_STORE_POOL_FORMAT_H_
