// WalkKeyspace — a keyspace's index entries, verified and sorted by key,
// as snapshot and verify need them (both compare by key).
//
// Reads every slot through Keyspace::ForEachSlot: a slot whose record does
// not verify is skipped and counted (after an unclean shutdown these are
// the commits recovery would clear); when two slots hold one key (an
// update a crash interrupted) the higher sequence wins, as Get and
// recovery decide. Memory: ~48 bytes per key plus the keys themselves.
// Thread-safety: the pool must not change during the walk (kvadmin holds
// its lock shared, so no writer can open it).
#ifndef KV_TOOLS_KVADMIN_POOL_WALK_H_
#define KV_TOOLS_KVADMIN_POOL_WALK_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/store/keyspace.h"
#include "progress.h"
#include "snapshot_format.h"

namespace kv::kvadmin {

struct WalkedKeyspace {
  struct Item {
    uint64_t key_offset;  // into keys
    uint32_t key_len;
    snapshot::EntryValue entry;
  };
  store::KeyspaceInfo info;
  std::string keys;         // every key, back to back
  std::vector<Item> items;  // sorted by key (bytewise), one per key
  std::vector<snapshot::SegmentValue> segments;  // per segment, from items
  uint64_t live_bytes = 0;
  uint64_t skipped = 0;                 // slots not holding a committed version
  std::vector<std::string> skip_notes;  // the first few of them, why
  uint64_t duplicates = 0;              // older versions dropped
  double read_seconds = 0;              // reading and verifying the index
  double sort_seconds = 0;

  std::string_view key(const Item& i) const {
    return std::string_view(keys).substr(i.key_offset, i.key_len);
  }
  // Sorted items' keys are scattered over `keys`: a loop over items calls
  // this at item i to start loading the key it will need a few items on.
  void PrefetchAhead(size_t i) const {
    constexpr size_t kAhead = 16;
    if (i + kAhead < items.size()) {
      __builtin_prefetch(keys.data() + items[i + kAhead].key_offset);
    }
  }
};

// Walks `ks`; `progress` counts slots holding an entry.
WalkedKeyspace WalkKeyspace(const store::Keyspace& ks, Progress* progress);

// A key for a person: printable ASCII as is, other bytes as \xNN.
std::string PrintableKey(std::string_view key);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_POOL_WALK_H_
