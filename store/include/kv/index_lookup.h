// The reader's algorithm over the published index and record formats:
// which slots of a key's neighbourhood may hold it, whether a record is
// the key's, and which valid version is the newest.
//
// Header-only so that the store (Keyspace::Get) and the client library
// (one-sided reads of a remote keyspace) run exactly the same code. The
// caller supplies bytes: the store points into its mapping, the client
// into buffers its RDMA reads filled. Pure functions; thread-safe.
// Prose twin: docs/format.md ("Reading a key").
#ifndef KV_INDEX_LOOKUP_H_
#define KV_INDEX_LOOKUP_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv::index_lookup {

// What a reader must know of a keyspace to decode its index and log.
struct Geometry {
  uint32_t keyspace_id = 0;
  uint64_t bucket_count = 0;  // power of two
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
};

// Slots in one key's neighbourhood (the home bucket and the probe buckets
// after it), read together in one access of kNeighbourhoodBytes.
inline constexpr size_t kNeighbourhoodSlots =
    index_format::kProbeBuckets * index_format::kSlotsPerBucket;
inline constexpr size_t kNeighbourhoodBytes =
    index_format::kProbeBuckets * index_format::kBucketSize;

// Byte offset of a key's neighbourhood within the index.
constexpr uint64_t NeighbourhoodOffset(uint64_t hash, uint64_t bucket_count) {
  return index_format::HomeBucket(hash, bucket_count) *
         index_format::kBucketSize;
}

// Whether the slot value at a neighbourhood position may hold the key
// (non-empty, same fingerprint). Bounds are checked by CheckRecord.
constexpr bool MayHold(uint64_t slot, uint64_t hash) {
  return slot != 0 && index_format::UnpackSlot(slot).fingerprint ==
                          index_format::Fingerprint(hash);
}

enum class Verdict {
  kMatch,     // a valid, live record of the key: *view filled
  kOtherKey,  // a valid record of another key (fingerprint collision)
  kBad,       // out of bounds, failing verification, or a tombstone: *why
};

// Judges the record a slot points to. `record` holds the slot's record
// bytes (SlotRecordBytes(slot) of them) — or is ignored when the slot is
// out of bounds. A slot must never point to a tombstone (a delete clears
// the slot), so one is kBad.
inline Verdict CheckRecord(uint64_t slot, const uint8_t* record,
                           const Geometry& g, std::string_view key,
                           record_format::RecordView* view, std::string* why) {
  if (!index_format::SlotInBounds(slot, g.log_size, g.segment_size)) {
    if (why) *why = "points outside the log or across a segment";
    return Verdict::kBad;
  }
  Status st = record_format::VerifyRecord(
      record, index_format::SlotRecordBytes(slot), g.keyspace_id, view);
  if (st.ok() && view->key != key) return Verdict::kOtherKey;
  if (st.ok() && view->tombstone()) {
    st = Status::Corruption("slot points to a tombstone");
  }
  if (!st.ok()) {
    if (why) *why = st.message();
    return Verdict::kBad;
  }
  return Verdict::kMatch;
}

// The newest valid version found in a neighbourhood.
struct Choice {
  int pos = -1;  // neighbourhood position of the chosen slot; -1: none
  uint64_t slot = 0;
  record_format::RecordView view;  // valid when pos >= 0
  int bad_pos = -1;  // a position whose slot was kBad (last seen), -1: none
  std::string bad_why;
  bool found() const { return pos >= 0; }
};

// Chooses, among the slots of `neigh` (kNeighbourhoodSlots values) that
// may hold `key`, the valid version with the highest sequence (more than
// one slot holds a key only while an update is in flight, or read-only
// after a crash). record_at(pos, slot) returns the bytes of that slot's
// record (SlotRecordBytes(slot) of them), or nullptr when the caller
// cannot provide them (the slot is then skipped as not verified).
template <typename RecordAt>
Choice ChooseNewest(const uint64_t* neigh, const Geometry& g,
                    std::string_view key, uint64_t hash, RecordAt record_at) {
  Choice c;
  for (size_t pos = 0; pos < kNeighbourhoodSlots; pos++) {
    const uint64_t slot = neigh[pos];
    if (!MayHold(slot, hash)) continue;
    const bool in_bounds =
        index_format::SlotInBounds(slot, g.log_size, g.segment_size);
    const uint8_t* record = in_bounds ? record_at(pos, slot) : nullptr;
    if (in_bounds && record == nullptr) continue;
    record_format::RecordView view;
    std::string why;
    switch (CheckRecord(slot, record, g, key, &view, &why)) {
      case Verdict::kOtherKey:
        break;
      case Verdict::kBad:
        c.bad_pos = static_cast<int>(pos);
        c.bad_why = std::move(why);
        break;
      case Verdict::kMatch:
        if (!c.found() || view.header.sequence > c.view.header.sequence) {
          c.pos = static_cast<int>(pos);
          c.slot = slot;
          c.view = view;
        }
        break;
    }
  }
  return c;
}

}  // namespace kv::index_lookup

#endif  // KV_INDEX_LOOKUP_H_
