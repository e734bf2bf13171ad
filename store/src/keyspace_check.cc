// Keyspace::Check — verifies every slot and every record a slot reaches.
#include <string>

#include "kv/index_format.h"
#include "kv/store/keyspace.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;

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
    const uint64_t v = __atomic_load_n(&all[i], __ATOMIC_ACQUIRE);
    if (v == 0) continue;
    report->slots++;
    const uint64_t b = i / ix::kSlotsPerBucket;
    const std::string where = ks + "slot " + std::to_string(b) + "." +
                              std::to_string(i % ix::kSlotsPerBucket) + " (" +
                              Hex(v) + ")";
    if (!SlotInBounds(v)) {
      report->problems.push_back(where + " points outside the log (" +
                                 std::to_string(log_size_) +
                                 " bytes) or across a segment boundary");
      continue;
    }
    // After an unclean shutdown (read-only, so not yet repaired), what a
    // crash mid-commit leaves is a note: the next writable open clears it.
    std::vector<std::string>& record_sink =
        unclean_ ? report->notes : report->problems;
    const std::string pending =
        unclean_ ? " (not closed cleanly: the next writable open clears it)"
                 : "";
    const ix::SlotFields f = ix::UnpackSlot(v);
    const uint64_t off = uint64_t{f.offset_units} * ix::kUnit;
    rf::RecordView view;
    Status st =
        rf::VerifyRecord(log_ + off, uint64_t{f.units} * ix::kUnit, id_, &view);
    if (!st.ok()) {
      record_sink.push_back(where + " -> log offset " + std::to_string(off) +
                            ": " + st.message() + pending);
      continue;
    }
    report->records_verified++;
    if (view.tombstone()) {
      report->problems.push_back(where + " points to a tombstone");
    }
    if (rf::RecordSize(view.key.size(), view.value.size()) !=
        uint64_t{f.units} * ix::kUnit) {
      report->problems.push_back(where + " length does not match its record");
    }
    if (view.value.size() > max_value_size_) {
      report->problems.push_back(where + " value exceeds the keyspace limit");
    }
    const uint64_t hash = view.header.key_hash;
    if (ix::Fingerprint(hash) != f.fingerprint) {
      report->problems.push_back(where + " fingerprint does not match its key");
    }
    const uint64_t home = ix::HomeBucket(hash, bucket_count_);
    if (b < home || b >= home + ix::kProbeBuckets) {
      report->problems.push_back(where + " is outside its key's buckets " +
                                 std::to_string(home) + ".." +
                                 std::to_string(home + ix::kProbeBuckets - 1));
      continue;
    }
    // The same key in two slots of its neighbourhood?
    for (uint64_t j = i + 1;
         j < (home + ix::kProbeBuckets) * ix::kSlotsPerBucket; j++) {
      const uint64_t w = __atomic_load_n(&all[j], __ATOMIC_ACQUIRE);
      if (w == 0 || ix::UnpackSlot(w).fingerprint != f.fingerprint ||
          !SlotInBounds(w)) {
        continue;
      }
      const ix::SlotFields g = ix::UnpackSlot(w);
      rf::RecordView other;
      if (rf::VerifyRecord(log_ + uint64_t{g.offset_units} * ix::kUnit,
                           uint64_t{g.units} * ix::kUnit, id_, &other)
              .ok() &&
          other.key == view.key) {
        record_sink.push_back(where + " holds a key that slot " +
                              std::to_string(j / ix::kSlotsPerBucket) + "." +
                              std::to_string(j % ix::kSlotsPerBucket) +
                              " holds too" + pending);
      }
    }
  }
}

}  // namespace kv::store
