// Keyspace::ForEachSlot — every slot of the index with its verified record,
// for offline tools (kvadmin snapshot and verify).
#include <string>

#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
}  // namespace

void Keyspace::ForEachSlot(
    const std::function<bool(const SlotEntry&)>& fn) const {
  Index::Reading reading(*index_);
  const uint64_t slots = index_->PhysicalSlots();
  const uint64_t* all = index_->Slot(0);
  SlotEntry e;
  // Slots are in hash order, records in log order: each record is a
  // cache miss, so fetch the ones a few slots ahead meanwhile.
  constexpr uint64_t kAhead = 16;
  for (uint64_t i = 0; i < slots; i++) {
    if (i + kAhead < slots) {
      const uint64_t next = LoadSlot(&all[i + kAhead]);
      if (next != 0 && SlotInBounds(next)) {
        __builtin_prefetch(log_ + uint64_t{ix::UnpackSlot(next).offset_units} *
                                      ix::kUnit);
      }
    }
    const uint64_t v = LoadSlot(&all[i]);
    if (v == 0) continue;
    const ix::SlotFields f = ix::UnpackSlot(v);
    e.slot = i;
    e.value = v;
    e.log_offset = uint64_t{f.offset_units} * ix::kUnit;
    e.length = static_cast<uint32_t>(uint64_t{f.units} * ix::kUnit);
    e.record = {};
    // The same rule recovery applies to decide what is a committed version.
    e.problem = SlotInBounds(v) ? SlotProblem(i, v, &e.record)
                                : "points outside the log or across a segment";
    if (!fn(e)) return;
  }
}

}  // namespace kv::store
