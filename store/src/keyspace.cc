// Keyspace: recovery, grants, lock-free lookup and iteration, stats.
// Commit is in keyspace_commit.cc, the cleaner in keyspace_clean.cc.
#include "kv/store/keyspace.h"

#include <cstring>
#include <string>

#include "index_slots.h"
#include "kv/index_format.h"
#include "segment_table.h"

namespace kv::store {
namespace {

namespace ix = kv::index_format;
namespace rf = kv::record_format;

constexpr size_t kStripes = 1024;
constexpr int kGetAttempts = 16;

}  // namespace

Keyspace::Keyspace(const pool_format::CatalogEntry& e, Mapping* mapping,
                   bool read_only, std::chrono::milliseconds grace_period)
    : name_(e.name, strnlen(e.name, sizeof(e.name))),
      id_(e.keyspace_id),
      bucket_count_(e.bucket_count),
      index_(mapping->base() + e.index_offset),
      log_(mapping->base() + e.log_offset),
      log_size_(e.log_size),
      segment_size_(e.segment_size),
      max_value_size_(e.max_value_size),
      entry_(e),
      mapping_(mapping),
      persister_(mapping->persister()),
      read_only_(read_only),
      segments_(std::make_unique<SegmentTable>(
          static_cast<uint32_t>(e.log_size / e.segment_size), e.segment_size,
          grace_period)),
      stripes_(new std::mutex[kStripes]) {}

Keyspace::~Keyspace() = default;

KeyspaceInfo Keyspace::info() const {
  KeyspaceInfo i;
  i.name = name_;
  i.id = id_;
  i.region_offset = entry_.region_offset;
  i.region_size = entry_.region_size;
  i.bucket_count = bucket_count_;
  i.log_offset = entry_.log_offset;
  i.log_size = log_size_;
  i.segment_size = segment_size_;
  i.max_value_size = max_value_size_;
  return i;
}

uint64_t* Keyspace::Bucket(uint64_t b) const {
  return reinterpret_cast<uint64_t*>(index_ + b * ix::kBucketSize);
}

std::mutex& Keyspace::StripeFor(uint64_t home) const {
  return stripes_[home % kStripes];
}

bool Keyspace::SlotInBounds(uint64_t slot) const {
  const ix::SlotFields f = ix::UnpackSlot(slot);
  if (f.units == 0 || f.fingerprint == 0) return false;
  const uint64_t begin = uint64_t{f.offset_units} * ix::kUnit;
  const uint64_t end = begin + uint64_t{f.units} * ix::kUnit;
  return end <= log_size_ && begin / segment_size_ == (end - 1) / segment_size_;
}

void Keyspace::Recover(uint64_t open_epoch, bool unclean,
                       std::vector<std::string>* notes) {
  // Sequences of this open start above every earlier open's.
  next_sequence_.store((open_epoch << kEpochShift) + 1);
  durable_epoch_.store(open_epoch);
  unclean_ = unclean;
  if (unclean && !read_only_) {
    RepairAfterCrash(notes);
    unclean_ = false;
  }
  const uint64_t slots =
      ix::PhysicalBuckets(bucket_count_) * ix::kSlotsPerBucket;
  const auto* all = reinterpret_cast<const uint64_t*>(index_);
  int64_t keys = 0;
  for (uint64_t i = 0; i < slots; i++) {
    const uint64_t v = LoadSlot(&all[i]);
    if (v == 0 || !SlotInBounds(v)) continue;  // Check() reports bad slots
    const ix::SlotFields f = ix::UnpackSlot(v);
    const uint64_t off = uint64_t{f.offset_units} * ix::kUnit;
    segments_->RecoverLive(static_cast<uint32_t>(off / segment_size_),
                           uint64_t{f.units} * ix::kUnit);
    keys++;
  }
  keys_.store(keys);
  segments_->FinishRecovery();
}

uint64_t Keyspace::NextSequence() {
  const uint64_t s = next_sequence_.fetch_add(1);
  const uint64_t epoch = s >> kEpochShift;
  if (epoch > durable_epoch_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(epoch_mu_);
    if (epoch > durable_epoch_.load()) {
      // Rare (every 2^40 sequences): a catalog persist.
      if (epoch_sink_) (void)epoch_sink_(epoch);
      durable_epoch_.store(epoch, std::memory_order_release);
    }
  }
  return s;
}

void Keyspace::PersistIndex() {
  if (read_only_) return;
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending_clears_.clear();  // covered by the whole-index persist below
  }
  persister_->Persist(index_,
                      ix::PhysicalBuckets(bucket_count_) * ix::kBucketSize);
}

void Keyspace::PersistPendingClears() {
  std::vector<uint64_t*> slots;
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    slots.swap(pending_clears_);
  }
  if (slots.empty()) return;
  std::vector<Persister::Range> ranges;
  ranges.reserve(slots.size());
  for (uint64_t* slot : slots) ranges.push_back({slot, sizeof(uint64_t)});
  persister_->PersistRanges(ranges.data(), ranges.size());
}

Result<SegmentGrant> Keyspace::GrantZeroed(bool use_reserve) {
  Result<SegmentGrant> g = segments_->Grant(use_reserve);
  if (!g.ok()) return g;
  g->keyspace_id = id_;
  // An update clears its key's old slot without persisting it. Before the
  // segment that slot pointed into can be rewritten, the clear must be
  // durable, or a crash could revive the slot over a new record.
  PersistPendingClears();
  // Zero [start, size) durably: a half-written record must not be able to
  // pass for an older record left at the same offset. Whole pages are
  // zeroed through the mapping (a hole on a file), the partial first page
  // by storing zeros.
  constexpr uint64_t kPage = 4096;
  const uint64_t seg_abs =
      static_cast<uint64_t>(log_ - mapping_->base()) + g->log_offset;
  uint64_t begin = g->start;
  const uint64_t page_end = (begin + kPage - 1) / kPage * kPage;
  if (begin < page_end && page_end <= g->size) {
    std::memset(log_ + g->log_offset + begin, 0, page_end - begin);
    persister_->Persist(log_ + g->log_offset + begin, page_end - begin);
    begin = page_end;
  }
  if (begin < g->size) {
    Status st = mapping_->Zero(seg_abs + begin, g->size - begin);
    if (!st.ok()) {
      (void)segments_->Return(g->segment, g->grant_id);
      return st;
    }
  }
  return g;
}

Result<SegmentGrant> Keyspace::GrantSegment(bool for_delete) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  return GrantZeroed(for_delete);
}

Status Keyspace::SealSegment(const SegmentGrant& grant) {
  return segments_->Seal(grant.segment, grant.grant_id);
}

Status Keyspace::ReturnSegment(const SegmentGrant& grant) {
  return segments_->Return(grant.segment, grant.grant_id);
}

Status Keyspace::Get(std::string_view key, std::string* value,
                     Version* version) const {
  if (key.size() < rf::kMinKeySize || key.size() > rf::kMaxKeySize) {
    return Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                   std::to_string(key.size()));
  }
  const uint64_t hash = ix::HashKey(key);
  const uint64_t home = ix::HomeBucket(hash, bucket_count_);
  const uint16_t fp = ix::Fingerprint(hash);
  std::string bad;
  for (int attempt = 0; attempt < kGetAttempts; attempt++) {
    // Find the valid version with the highest sequence (more than one slot
    // holds the key only while an update is in flight, or read-only after
    // a crash); copy its value once, at the end.
    bool raced = false;
    const uint64_t* best_slot = nullptr;
    uint64_t best_value = 0;
    rf::RecordView best;
    bad.clear();
    for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
      const uint64_t* bucket = Bucket(b);
      for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
        const uint64_t v = LoadSlot(&bucket[s]);
        if (v == 0 || ix::UnpackSlot(v).fingerprint != fp) continue;
        auto where = [&] {  // only built for a message
          return "keyspace '" + name_ + "' " +
                 SlotName(b * ix::kSlotsPerBucket + s);
        };
        if (!SlotInBounds(v)) {
          bad = where() + " points outside the log or across a segment";
          continue;
        }
        const ix::SlotFields f = ix::UnpackSlot(v);
        const uint64_t off = uint64_t{f.offset_units} * ix::kUnit;
        rf::RecordView view;
        Status st = rf::VerifyRecord(log_ + off, uint64_t{f.units} * ix::kUnit,
                                     id_, &view);
        if (st.ok() && view.key != key) continue;  // fingerprint collision
        if (st.ok() && view.tombstone()) {
          st = Status::Corruption("slot points to a tombstone");
        }
        if (!st.ok()) {
          // A record reclaimed under a changing slot is no corruption.
          if (LoadSlot(&bucket[s]) != v) {
            raced = true;
          } else {
            bad = where() + " (log offset " + std::to_string(off) +
                  "): " + st.message();
          }
          continue;
        }
        if (best_slot == nullptr ||
            view.header.sequence > best.header.sequence) {
          best_slot = &bucket[s];
          best_value = v;
          best = view;
        }
      }
    }
    if (best_slot != nullptr) {
      value->assign(best.value.data(), best.value.size());
      // The slot unchanged across the copy means the record stayed live
      // (hence immutable) throughout; otherwise start over.
      if (LoadSlot(best_slot) == best_value) {
        if (version != nullptr) {
          const ix::SlotFields f = ix::UnpackSlot(best_value);
          *version = {best.header.sequence,
                      uint64_t{f.offset_units} * ix::kUnit,
                      static_cast<uint32_t>(uint64_t{f.units} * ix::kUnit)};
        }
        return Status::Ok();
      }
      raced = true;
    }
    if (!raced) break;
  }
  if (!bad.empty()) return Status::Corruption(bad);
  return Status::NotFound("key not found");
}

Status Keyspace::ForEach(
    const std::function<bool(const rf::RecordView&)>& fn) const {
  const uint64_t slots =
      ix::PhysicalBuckets(bucket_count_) * ix::kSlotsPerBucket;
  const auto* all = reinterpret_cast<const uint64_t*>(index_);
  for (uint64_t i = 0; i < slots; i++) {
    const uint64_t v = LoadSlot(&all[i]);
    if (v == 0) continue;
    if (!SlotInBounds(v)) {
      return Status::Corruption("keyspace '" + name_ + "' " + SlotName(i) +
                                " points outside the log");
    }
    const ix::SlotFields f = ix::UnpackSlot(v);
    const uint64_t off = uint64_t{f.offset_units} * ix::kUnit;
    rf::RecordView view;
    Status st =
        rf::VerifyRecord(log_ + off, uint64_t{f.units} * ix::kUnit, id_, &view);
    if (!st.ok() || view.tombstone()) {
      if (LoadSlot(&all[i]) != v) continue;  // changed under us
      return Status::Corruption("keyspace '" + name_ + "' " + SlotName(i) +
                                ": " + (st.ok() ? "tombstone" : st.message()));
    }
    if (!fn(view)) break;
  }
  return Status::Ok();
}

KeyspaceStats Keyspace::Stats() const {
  KeyspaceStats st;
  segments_->FillStats(&st);
  const int64_t k = keys_.load();
  st.keys = k > 0 ? static_cast<uint64_t>(k) : 0;
  return st;
}

}  // namespace kv::store
