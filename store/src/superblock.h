// Superblock: format (two copies) and load with fallback. Private.
#ifndef KV_STORE_SUPERBLOCK_H_
#define KV_STORE_SUPERBLOCK_H_

#include <string>
#include <vector>

#include "kv/status.h"
#include "kv/store/mapping.h"
#include "kv/store/pool_format.h"

namespace kv::store {

// Writes both superblock copies for a pool of the mapping's size: copy A,
// persist, copy B, persist. The catalog must already be zero.
Status FormatSuperblocks(Mapping* m);

// Empty when `sb` is a valid superblock for a pool of `mapping_size` bytes,
// otherwise what is wrong with it.
std::string ValidateSuperblock(const pool_format::Superblock& sb,
                               uint64_t mapping_size);

// Loads the superblock: a good copy is used when the other is damaged
// (and, when the mapping is writable, the damaged one is rewritten; a note
// says so). corruption naming both copies' problems when neither is good.
Status LoadSuperblock(Mapping* m, pool_format::Superblock* out,
                      std::vector<std::string>* notes);

std::string UuidString(const uint8_t uuid[16]);

}  // namespace kv::store

#endif  // KV_STORE_SUPERBLOCK_H_
