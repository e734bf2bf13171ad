// Keyspace::RepairAfterCrash — what an unclean shutdown can leave in the
// index, and its repair.
//
// A put stores its slot in an empty slot and persists record and slot as
// one persist point, in no particular order; it then clears the key's old
// slot without persisting that. So after a crash:
//   (a) a slot may point to a record that never became durable: its
//       bytes are the zeros the segment was granted with, or a mix of
//       zeros and record (GrantSegment zeroes the writable part durably
//       first, so stale older records cannot show through). The commit was
//       not acknowledged; the slot is cleared.
//   (b) two slots may hold the same key, the old one's clear lost. The
//       record with the higher sequence is the newer commit; the other
//       slot is cleared. (A delete persists the key's buckets before
//       clearing, so (b) never resurrects a deleted key.)
//   (c) a slot outside its key's buckets: an index growth was interrupted
//       (keyspace_grow.cc) and this is a moved slot's other copy. Cleared;
//       the copy inside the key's buckets holds.
// Every repair is persisted and reported as a recovery note.
#include <string>

#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
}  // namespace

std::string Keyspace::SlotProblem(uint64_t i, uint64_t v,
                                  rf::RecordView* view) const {
  const uint64_t off = ix::SlotLogOffset(v);
  const uint64_t bytes = ix::SlotRecordBytes(v);
  Status st = rf::VerifyRecord(log_ + off, bytes, id_, view);
  if (!st.ok()) return st.message();
  if (view->tombstone()) return "points to a tombstone";
  if (rf::RecordSizeOf(*view) != bytes) {
    return "length does not match its record";
  }
  const uint64_t hash = view->header.key_hash;
  if (ix::Fingerprint(hash) != ix::UnpackSlot(v).fingerprint) {
    return "fingerprint does not match its key";
  }
  const uint64_t home = ix::HomeBucket(hash, index_->bucket_count());
  const uint64_t b = i / ix::kSlotsPerBucket;
  if (b < home || b >= home + ix::kProbeBuckets) {
    return "is outside its key's buckets";
  }
  return "";
}

void Keyspace::ForEachDuplicate(
    const std::function<void(uint64_t, uint64_t, uint64_t)>& fn) const {
  // Two slots of one key lie in its home bucket or the next, so each pair
  // is within two adjacent buckets.
  const uint64_t slots = index_->PhysicalSlots();
  const uint64_t* all = index_->Slot(0);
  for (uint64_t i = 0; i < slots; i++) {
    const uint64_t v = LoadSlot(&all[i]);
    if (v == 0 || !SlotInBounds(v)) continue;
    const uint64_t end =
        std::min(slots, (i / ix::kSlotsPerBucket + 2) * ix::kSlotsPerBucket);
    for (uint64_t j = i + 1; j < end; j++) {
      const uint64_t w = LoadSlot(&all[j]);
      if (w == 0 ||
          ix::UnpackSlot(w).fingerprint != ix::UnpackSlot(v).fingerprint ||
          !SlotInBounds(w)) {
        continue;
      }
      rf::RecordView a, b;
      if (!SlotProblem(i, v, &a).empty() || !SlotProblem(j, w, &b).empty() ||
          a.key != b.key) {
        continue;
      }
      fn(i, j, a.header.sequence < b.header.sequence ? i : j);
    }
  }
}

void Keyspace::RepairAfterCrash(std::vector<std::string>* notes) {
  uint64_t* all = index_->Slot(0);
  const std::string ks = "keyspace '" + name_ + "': ";
  auto clear = [&](uint64_t i, const std::string& why) {
    __atomic_store_n(&all[i], 0, __ATOMIC_RELEASE);
    persister_->Persist(&all[i], sizeof(uint64_t));
    notes->push_back(ks + "cleared " + SlotName(i) + " " + why);
  };
  index_->ForEachSlot([&](uint64_t i, uint64_t v) {
    // Out-of-bounds slots cannot come from a commit: left for Check().
    if (!SlotInBounds(v)) return true;
    rf::RecordView view;
    const std::string why = SlotProblem(i, v, &view);
    if (!why.empty()) {
      clear(i,
            "(a commit the crash interrupted, or an index growth; its "
            "record: " +
                why + ")");
    }
    return true;
  });
  ForEachDuplicate([&](uint64_t i, uint64_t j, uint64_t older) {
    if (LoadSlot(&all[i]) == 0 || LoadSlot(&all[j]) == 0) return;
    clear(older, "(an older version of the key " +
                     SlotName(i == older ? j : i) +
                     " holds; the crash came before its clear was durable)");
  });
}

}  // namespace kv::store
