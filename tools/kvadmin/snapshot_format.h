// The kvadmin snapshot schema: column families and the encoding of their
// keys and values. Pure functions, no RocksDB. Prose twin:
// docs/snapshot_format.md (change both together, and bump
// kSchemaVersion when a reader of the old version would misread the new).
// Thread-safety: pure functions and plain structs.
#ifndef KV_TOOLS_KVADMIN_SNAPSHOT_FORMAT_H_
#define KV_TOOLS_KVADMIN_SNAPSHOT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::kvadmin::snapshot {

inline constexpr uint32_t kSchemaVersion = 1;

// Column families (besides RocksDB's "default", which stays empty).
inline constexpr const char* kMetaCf = "meta";
inline constexpr const char* kCatalogCf = "catalog";
inline constexpr const char* kSegmentsCf = "segments";
inline constexpr const char* kEntriesCf = "entries";

// Keys of the meta column family (values are decimal or plain text).
namespace meta {
inline constexpr const char* kSchemaVersion = "schema_version";
inline constexpr const char* kTool = "tool";
inline constexpr const char* kCreatedUnix = "created_unix";
inline constexpr const char* kPoolUuid = "pool_uuid";
inline constexpr const char* kPoolSize = "pool_size";
inline constexpr const char* kPoolFormatVersion = "pool_format_version";
inline constexpr const char* kKeyspaces = "keyspaces";
inline constexpr const char* kEntries = "entries";
inline constexpr const char* kSegments = "segments";
inline constexpr const char* kSkippedSlots = "skipped_slots";
inline constexpr const char* kEntriesCrc = "entries_crc32c";
inline constexpr const char* kComplete = "complete";  // "1", written last
}  // namespace meta

// catalog: key = keyspace id (4 bytes big-endian).
struct CatalogValue {
  uint32_t id = 0;
  uint64_t region_offset = 0;
  uint64_t region_size = 0;
  uint64_t bucket_count = 0;
  uint64_t log_offset = 0;
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
  uint64_t keys = 0;        // entries of this keyspace in the snapshot
  uint64_t live_bytes = 0;  // bytes of their records
  std::string name;
};

// segments: key = keyspace id, segment number (4 + 4 bytes big-endian).
struct SegmentValue {
  uint8_t state = 0;  // 0 free, 1 sealed (what recovery would make of it)
  uint64_t live_bytes = 0;
  uint64_t live_records = 0;
};

// entries: key = keyspace id (4 bytes big-endian) + the user key.
struct EntryValue {
  uint64_t slot = 0;        // bucket * 8 + position in the bucket
  uint64_t log_offset = 0;  // of the record, relative to the log start
  uint32_t length = 0;      // record bytes, a multiple of 64
  uint64_t sequence = 0;
  uint32_t crc = 0;  // the record header's CRC32C
  uint32_t value_len = 0;
  uint16_t flags = 0;  // record flags; bit 0 tombstone
};
inline constexpr size_t kEntryValueSize = 38;

std::string IdKey(uint32_t id);
std::string SegmentKey(uint32_t id, uint32_t segment);
std::string EntryKey(uint32_t id, std::string_view key);
// Splits an entries key. corruption when shorter than 5 bytes.
Status ParseEntryKey(std::string_view k, uint32_t* id, std::string_view* key);
Status ParseIdKey(std::string_view k, uint32_t* id);

std::string EncodeCatalog(const CatalogValue& v);
Status DecodeCatalog(std::string_view b, CatalogValue* v);
std::string EncodeSegment(const SegmentValue& v);
Status DecodeSegment(std::string_view b, SegmentValue* v);
void EncodeEntry(const EntryValue& v, char out[kEntryValueSize]);
Status DecodeEntry(std::string_view b, EntryValue* v);

// The running checksum over the entries column family, in key order:
// CRC32C over, per entry, its key length (4 bytes LE), key, value.
uint32_t ExtendEntriesCrc(uint32_t crc, std::string_view key,
                          std::string_view value);

}  // namespace kv::kvadmin::snapshot

#endif  // KV_TOOLS_KVADMIN_SNAPSHOT_FORMAT_H_
