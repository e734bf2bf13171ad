// The restore journal's encoding (docs/snapshot_format.md, "Restore
// journal"). Private: PoolRestore writes it, RollBackRestore reads it.
#ifndef KV_STORE_SRC_RESTORE_JOURNAL_CODEC_H_
#define KV_STORE_SRC_RESTORE_JOURNAL_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"

namespace kv::store {

struct RestoreJournalContents {
  uint8_t uuid[16] = {};
  uint64_t pool_size = 0;
  std::string catalog;  // the catalog area's bytes before the restore
  struct Slot {
    uint64_t offset;     // absolute, in the pool; 8-byte aligned
    uint64_t old_value;  // the slot's bytes before the restore
  };
  std::vector<Slot> slots;
};

std::string EncodeRestoreJournal(const RestoreJournalContents& c);
// corruption naming what is wrong (magic, version, length, checksum).
Status DecodeRestoreJournal(std::string_view bytes, RestoreJournalContents* c);

}  // namespace kv::store

#endif  // KV_STORE_SRC_RESTORE_JOURNAL_CODEC_H_
