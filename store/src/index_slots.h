// Small helpers every part of Keyspace uses on index slots (private).
#ifndef KV_STORE_SRC_INDEX_SLOTS_H_
#define KV_STORE_SRC_INDEX_SLOTS_H_

#include <cstdint>
#include <string>

#include "kv/index_format.h"

namespace kv::store {

// Slots are read with acquire loads: a slot's record was written before
// the slot was stored (release).
inline uint64_t LoadSlot(const uint64_t* slot) {
  return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

// "slot <bucket>.<index in bucket>" for messages.
inline std::string SlotName(uint64_t slot_index) {
  return "slot " + std::to_string(slot_index / index_format::kSlotsPerBucket) +
         "." + std::to_string(slot_index % index_format::kSlotsPerBucket);
}

}  // namespace kv::store

#endif  // KV_STORE_SRC_INDEX_SLOTS_H_
