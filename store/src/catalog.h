// The keyspace catalog on media: reading a slot's current copy, sealing
// (checksumming) an entry, and validating an entry's geometry. Private.
#ifndef KV_STORE_CATALOG_H_
#define KV_STORE_CATALOG_H_

#include <cstdint>
#include <string>

#include "kv/store/keyspace_sizing.h"  // IndexBytes
#include "kv/store/mapping.h"
#include "kv/store/pool_format.h"

namespace kv::store {

// True when `e` has the catalog magic and a matching checksum.
bool CatalogEntryIntact(const pool_format::CatalogEntry& e);
// Sets e->magic and e->crc.
void SealCatalogEntry(pool_format::CatalogEntry* e);
// The current copy of catalog slot `slot` (0 or 1; -1 when neither copy is
// intact — a slot never written, or whose first write was torn: free).
int ReadCatalogSlot(const uint8_t* base, uint32_t slot,
                    pool_format::CatalogEntry* out);
// Empty when a live entry's geometry fits the pool and the format rules;
// otherwise what is wrong.
std::string ValidateEntryGeometry(const pool_format::CatalogEntry& e,
                                  uint64_t pool_size);
// Makes `entry` the current copy of catalog slot `slot`: seals it with
// generation `current_generation` + 1, writes it over the copy that is not
// `current_copy` (-1: none is current) and persists it — the commit point
// of a catalog change. Returns the copy written; *entry is the sealed one.
int WriteCatalogCopy(Mapping* m, uint32_t slot, int current_copy,
                     uint64_t current_generation,
                     pool_format::CatalogEntry* entry);

}  // namespace kv::store

#endif  // KV_STORE_CATALOG_H_
