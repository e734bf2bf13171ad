#include "catalog.h"

#include <cstring>

#include "commit_log.h"
#include "kv/crc32c.h"
#include "kv/index_format.h"
#include "kv/keyspace_name.h"
#include "kv/record_format.h"

namespace kv::store {
namespace pf = pool_format;

namespace {
uint32_t EntryCrc(const pf::CatalogEntry& e) {
  return Crc32c(reinterpret_cast<const uint8_t*>(&e) + 4, sizeof(e) - 4);
}
bool IsPow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
}  // namespace

bool CatalogEntryIntact(const pf::CatalogEntry& e) {
  return e.magic == pf::kCatalogMagic && EntryCrc(e) == e.crc;
}

void SealCatalogEntry(pf::CatalogEntry* e) {
  e->magic = pf::kCatalogMagic;
  e->crc = EntryCrc(*e);
}

int ReadCatalogSlot(const uint8_t* base, uint32_t slot, pf::CatalogEntry* out) {
  pf::CatalogEntry c[2];
  bool ok[2];
  for (int i = 0; i < 2; i++) {
    std::memcpy(&c[i], base + pf::CatalogCopyOffset(slot, i), sizeof(c[i]));
    ok[i] = CatalogEntryIntact(c[i]);
  }
  int cur = -1;
  if (ok[0] && ok[1]) {
    cur = c[1].generation > c[0].generation ? 1 : 0;
  } else if (ok[0] || ok[1]) {
    cur = ok[0] ? 0 : 1;
  }
  if (cur >= 0) *out = c[cur];
  return cur;
}

int WriteCatalogCopy(Mapping* m, uint32_t slot, int current_copy,
                     uint64_t current_generation, pf::CatalogEntry* entry) {
  const int target = current_copy == 0 ? 1 : 0;
  entry->generation = (current_copy >= 0 ? current_generation : 0) + 1;
  SealCatalogEntry(entry);
  uint8_t* dst = m->base() + pf::CatalogCopyOffset(slot, target);
  std::memcpy(dst, entry, sizeof(*entry));
  m->persister()->Persist(dst, sizeof(*entry));  // commit point
  return target;
}

std::string ValidateEntryGeometry(const pf::CatalogEntry& e,
                                  uint64_t pool_size) {
  if (e.state != static_cast<uint32_t>(pf::KeyspaceState::kLive) &&
      e.state != static_cast<uint32_t>(pf::KeyspaceState::kDropped) &&
      e.state != static_cast<uint32_t>(pf::KeyspaceState::kFree)) {
    return "unknown state " + std::to_string(e.state);
  }
  if (e.state != static_cast<uint32_t>(pf::KeyspaceState::kLive)) return "";
  const size_t n = strnlen(e.name, sizeof(e.name));
  if (n == sizeof(e.name)) return "name is not NUL-terminated";
  Status ns = ValidateKeyspaceName(std::string_view(e.name, n));
  if (!ns.ok()) return ns.message();
  if (e.keyspace_id == 0) return "keyspace id 0";
  if (e.region_offset < pf::kDataOffset ||
      e.region_offset % pf::kRegionAlign != 0 || e.region_size == 0 ||
      e.region_offset > pool_size ||
      e.region_size > pool_size - e.region_offset) {
    return "region [" + std::to_string(e.region_offset) + ", +" +
           std::to_string(e.region_size) +
           ") lies outside the pool's data area";
  }
  if (!IsPow2(e.bucket_count) || e.bucket_count > (1ull << 32)) {
    return "bucket count " + std::to_string(e.bucket_count) +
           " is not a power of two up to 2^32";
  }
  const uint64_t region_end = e.region_offset + e.region_size;
  if (e.index_offset != e.region_offset + index_format::kIndexHeaderBytes ||
      e.region_size < index_format::kIndexHeaderBytes ||
      IndexBytes(e.bucket_count) >
          e.region_size - index_format::kIndexHeaderBytes) {
    return "index does not fit its region";
  }
  if (e.index_generation == 0 || e.index_generation >= (1ull << 56)) {
    return "index generation " + std::to_string(e.index_generation) +
           " is out of range";
  }
  if (e.segment_size < 4096 || e.segment_size % 4096 != 0 ||
      e.segment_size > (1u << 30)) {
    return "segment size " + std::to_string(e.segment_size) +
           " is not a multiple of 4096 in 4 KiB..1 GiB";
  }
  if (e.log_size == 0 || e.log_size % e.segment_size != 0 ||
      e.log_size / index_format::kUnit > index_format::kMaxLogUnits) {
    return "log size " + std::to_string(e.log_size) +
           " is not a positive multiple of the segment size up to 256 GiB";
  }
  // A grown index extends over the log's first segments (the log's
  // offsets stay put); the log itself starts after the index's first page.
  if (e.log_offset <= e.index_offset || e.log_offset % pf::kRegionAlign != 0 ||
      e.log_offset > region_end || e.log_size > region_end - e.log_offset) {
    return "log extends outside its region";
  }
  if (e.commit_log_entries == 0) {
    if (e.commit_log_offset != 0) return "commit log of 0 entries at an offset";
  } else if (e.commit_log_entries < commit_log::kMinEntries ||
             e.commit_log_entries > commit_log::kMaxEntries ||
             e.commit_log_offset != e.log_offset + e.log_size ||
             e.commit_log_entries * commit_log::kEntrySize >
                 region_end - e.commit_log_offset) {
    // (log_offset + log_size <= region_end was checked above.)
    return "commit log of " + std::to_string(e.commit_log_entries) +
           " entries at " + std::to_string(e.commit_log_offset) +
           " is not right after the log inside its region (" +
           std::to_string(commit_log::kMinEntries) + ".." +
           std::to_string(commit_log::kMaxEntries) + " entries)";
  }
  if (e.max_value_size > record_format::kMaxValueSize ||
      record_format::RecordSize(record_format::kMaxKeySize, e.max_value_size) >
          e.segment_size) {
    return "max value size " + std::to_string(e.max_value_size) +
           " does not fit a segment";
  }
  return "";
}

}  // namespace kv::store
