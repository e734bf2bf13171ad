// Keyspace::Check — verifies every slot and every record a slot reaches.
#include <string>

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
  const uint64_t phys = ix::PhysicalBuckets(bucket_count_);
  const auto* all = reinterpret_cast<const uint64_t*>(index_);
  const std::string ks = "keyspace '" + name_ + "': ";
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
    if (rf::RecordSize(view.key.size(), view.value.size()) != bytes) {
      report->problems.push_back(where + " length does not match its record");
    }
    if (view.value.size() > max_value_size_) {
      report->problems.push_back(where + " value exceeds the keyspace limit");
    }
    const uint64_t hash = view.header.key_hash;
    if (ix::Fingerprint(hash) != ix::UnpackSlot(v).fingerprint) {
      report->problems.push_back(where + " fingerprint does not match its key");
    }
    const uint64_t home = ix::HomeBucket(hash, bucket_count_);
    if (b < home || b >= home + ix::kProbeBuckets) {
      report->problems.push_back(where + " is outside its key's buckets " +
                                 std::to_string(home) + ".." +
                                 std::to_string(home + ix::kProbeBuckets - 1));
    }
  }
  // The same key in two slots of its neighbourhood: the same pairs the
  // writable recovery repairs (ForEachDuplicate).
  ForEachDuplicate([&](uint64_t i, uint64_t j, uint64_t) {
    (unclean_ ? report->notes : report->problems)
        .push_back(ks + SlotName(i) + " (" + Hex(LoadSlot(&all[i])) +
                   ") holds a key that " + SlotName(j) + " holds too" +
                   (unclean_ ? kPendingRepair : ""));
  });
}

}  // namespace kv::store
