// Keyspace::Check — verifies every slot and every record a slot reaches.
#include <string>
#include <unordered_map>

#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;

constexpr const char* kPendingRepair =
    " (not closed cleanly: the next writable open clears it)";

std::string Hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 60; i >= 0; i -= 4) s += d[(v >> i) & 0xf];
  return s;
}
}  // namespace

void Keyspace::Check(CheckReport* report) const {
  report->keyspaces++;
  Index::Reading reading(*index_);
  const uint64_t bucket_count = index_->bucket_count();
  const uint64_t phys = ix::PhysicalBuckets(bucket_count);
  const uint64_t* all = index_->Slot(0);
  const uint64_t index_segments = SegmentsUnderIndex(bucket_count);
  const std::string ks = "keyspace '" + name_ + "': ";
  // Verified slots by key hash, to find a key held by two slots anywhere
  // in the index. Deliberately not ForEachDuplicate (the pairs recovery
  // repairs): a verifier sharing the repair's search is blind to what the
  // repair misses.
  std::unordered_multimap<uint64_t, uint64_t> by_hash;
  for (uint64_t i = 0; i < phys * ix::kSlotsPerBucket; i++) {
    const uint64_t v = LoadSlot(&all[i]);
    if (v == 0) continue;
    report->slots++;
    const uint64_t b = i / ix::kSlotsPerBucket;
    const std::string where = ks + SlotName(i) + " (" + Hex(v) + ")";
    if (!SlotInBounds(v)) {
      report->problems.push_back(where + " points outside the log (" +
                                 std::to_string(log_size_) +
                                 " bytes) or across a segment boundary");
      continue;
    }
    // After an unclean shutdown (read-only, so not yet repaired), what a
    // crash mid-commit leaves is a note: the next writable open clears it.
    const uint64_t off = ix::SlotLogOffset(v);
    const uint64_t bytes = ix::SlotRecordBytes(v);
    if (off / segment_size_ < index_segments) {
      report->problems.push_back(where + " points into the log's first " +
                                 std::to_string(index_segments) +
                                 " segments, which the index took");
      continue;
    }
    rf::RecordView view;
    Status st = rf::VerifyRecord(log_ + off, bytes, id_, &view);
    if (!st.ok()) {
      (unclean_ ? report->notes : report->problems)
          .push_back(where + " -> log offset " + std::to_string(off) + ": " +
                     st.message() + (unclean_ ? kPendingRepair : ""));
      continue;
    }
    report->records_verified++;
    if (view.tombstone()) {
      report->problems.push_back(where + " points to a tombstone");
    }
    if (rf::RecordSizeOf(view) != bytes) {
      report->problems.push_back(where + " length does not match its record");
    }
    if (view.value.size() > max_value_size_) {
      report->problems.push_back(where + " value exceeds the keyspace limit");
    }
    const uint64_t hash = view.header.key_hash;
    if (ix::Fingerprint(hash) != ix::UnpackSlot(v).fingerprint) {
      report->problems.push_back(where + " fingerprint does not match its key");
    }
    const uint64_t home = ix::HomeBucket(hash, bucket_count);
    if (b < home || b >= home + ix::kProbeBuckets) {
      // An interrupted index growth leaves such copies (keyspace_grow.cc).
      (unclean_ ? report->notes : report->problems)
          .push_back(where + " is outside its key's buckets " +
                     std::to_string(home) + ".." +
                     std::to_string(home + ix::kProbeBuckets - 1) +
                     (unclean_ ? kPendingRepair : ""));
      continue;
    }
    if (view.tombstone()) continue;
    const auto [first, last] = by_hash.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      const uint64_t j = it->second;
      const uint64_t w = LoadSlot(&all[j]);
      rf::RecordView other;
      if (!rf::VerifyRecord(log_ + ix::SlotLogOffset(w), ix::SlotRecordBytes(w),
                            id_, &other)
               .ok() ||
          other.key != view.key) {
        continue;
      }
      (unclean_ ? report->notes : report->problems)
          .push_back(ks + SlotName(j) + " (" + Hex(w) + ") holds a key that " +
                     SlotName(i) + " holds too" +
                     (unclean_ ? kPendingRepair : ""));
    }
    by_hash.emplace(hash, i);
  }
  if (replay_pending_ != 0) {
    report->notes.push_back(
        ks + "its commit log holds " + std::to_string(replay_pending_) +
        " commits the index does not (not closed cleanly: the next writable "
        "open replays them)");
  }
}

}  // namespace kv::store
