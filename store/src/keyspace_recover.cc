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
//
// A keyspace with a commit log (format 4) persists no bucket in a commit
// point: the index on media may then also lack an acknowledged put or
// delete. After the repairs, ReplayCommitLog applies what the entries past
// the checkpoint hold (docs/format.md, "Commit log", rule 4).
#include <string>
#include <unordered_map>

#include "commit_log.h"
#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/index_lookup.h"
#include "kv/store/keyspace.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace il = kv::index_lookup;
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

Keyspace::Replay Keyspace::PlanReplay() const {
  Replay plan;
  plan.next_lsn = commit_log_->start();
  const uint32_t under_index = SegmentsUnderIndex(index_->bucket_count());
  // Per key, the newest entry whose record verifies: what it names is a
  // commit the server sealed (writers never write this ring).
  std::unordered_map<std::string_view, ReplayItem> newest;
  commit_log_->ForEachPending([&](const commit_log::Entry& e) {
    plan.next_lsn = std::max(plan.next_lsn, e.lsn + 1);
    rf::RecordView view;
    const uint64_t off = ix::SlotLogOffset(e.slot);
    const uint64_t bytes = ix::SlotRecordBytes(e.slot);
    // Bounds first (overflow-safe in SlotInBounds); a segment the index
    // took holds buckets now, never a record.
    if (!SlotInBounds(e.slot) || off / segment_size_ < under_index ||
        !rf::VerifyRecord(log_ + off, bytes, id_, &view).ok() ||
        rf::RecordSizeOf(view) != bytes || view.header.sequence != e.sequence ||
        ix::Fingerprint(view.header.key_hash) !=
            ix::UnpackSlot(e.slot).fingerprint ||
        view.tombstone() != e.tombstone()) {
      plan.ignored++;
      return;
    }
    auto [it, inserted] = newest.try_emplace(view.key);
    if (inserted || it->second.record.header.sequence < e.sequence) {
      it->second.slot_value = e.slot;
      it->second.record = view;
    }
  });
  // The key's newest slot (a read-only open leaves duplicates): Get's
  // choice, over the neighbourhood as it is now.
  auto newest_slot = [&](std::string_view key, uint64_t hash, Found* out) {
    const uint64_t buckets = index_->bucket_count();
    uint64_t* live = index_->Bucket(ix::HomeBucket(hash, buckets));
    uint64_t neigh[il::kNeighbourhoodSlots];
    for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
      neigh[i] = LoadSlot(&live[i]);
    }
    const il::Choice c = il::ChooseNewest(
        neigh, geometry(buckets), key, hash, [&](size_t, uint64_t slot) {
          return static_cast<const uint8_t*>(log_ + ix::SlotLogOffset(slot));
        });
    if (!c.found()) return false;
    *out = {&live[c.pos], c.slot, c.view};
    return true;
  };
  for (auto& [key, item] : newest) {
    item.found = newest_slot(key, item.record.header.key_hash, &item.old);
    if (item.found &&
        item.old.view.header.sequence >= item.record.header.sequence) {
      continue;  // the index holds it, or something newer
    }
    if (!item.found && item.record.tombstone()) continue;  // absent already
    plan.items.push_back(item);
  }
  return plan;
}

void Keyspace::ReplayCommitLog(std::vector<std::string>* notes) {
  Replay plan = PlanReplay();
  const std::string ks = "keyspace '" + name_ + "': ";
  // Clears first, so that the puts find the room they had.
  uint64_t deletes = 0;
  uint64_t puts = 0;
  for (const ReplayItem& it : plan.items) {
    if (!it.record.tombstone()) continue;
    __atomic_store_n(it.old.slot, 0, __ATOMIC_RELEASE);
    deletes++;
  }
  for (const ReplayItem& it : plan.items) {
    if (it.record.tombstone()) continue;
    if (it.found) {
      __atomic_store_n(it.old.slot, it.slot_value, __ATOMIC_RELEASE);
      puts++;
      continue;
    }
    const uint64_t home =
        ix::HomeBucket(it.record.header.key_hash, index_->bucket_count());
    if (index_->TakeEmptySlot(home, it.slot_value, true) == nullptr) {
      notes->push_back(ks + "the commit log's version " +
                       std::to_string(it.record.header.sequence) +
                       " of a key found no free slot in its buckets and was "
                       "not replayed");
      continue;
    }
    puts++;
  }
  if (puts + deletes != 0) {
    notes->push_back(ks + "replayed " + std::to_string(puts) + " puts and " +
                     std::to_string(deletes) +
                     " deletes from its commit log that the index on media "
                     "did not hold yet");
  }
  if (plan.ignored != 0) {
    notes->push_back(ks + std::to_string(plan.ignored) +
                     " commit log entries name no committed record (a commit "
                     "the crash interrupted) and were not replayed");
  }
  // Durable before anything reads past it; the entries are not read again.
  commit_log_->Reset(plan.next_lsn, [this] { index_->PersistAll(); });
}

}  // namespace kv::store
