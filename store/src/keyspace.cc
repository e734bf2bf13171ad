// Keyspace: commit, lookup, iteration, segment grants.
//
// Crash-consistency order of a commit (see docs/format.md, "Commit"):
//   1. the writer made the record durable (precondition of Commit);
//   2. Commit verifies it, then stores the slot with one atomic 8-byte
//      store and persists it — the commit point;
//   3. only then is space accounting updated, so a segment is freed (and
//      eventually overwritten) only after no durable slot points into it.
#include "kv/store/keyspace.h"

#include <cstring>
#include <string>

#include "kv/index_format.h"
#include "segment_table.h"

namespace kv::store {
namespace {

namespace ix = kv::index_format;
namespace rf = kv::record_format;

constexpr size_t kStripes = 1024;
constexpr int kGetAttempts = 16;

uint64_t LoadSlot(const uint64_t* slot) {
  return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

std::string SlotName(uint64_t slot_index) {
  return "slot " + std::to_string(slot_index / ix::kSlotsPerBucket) + "." +
         std::to_string(slot_index % ix::kSlotsPerBucket);
}

}  // namespace

Keyspace::Keyspace(const pool_format::CatalogEntry& e, uint8_t* base,
                   Persister* persister, bool read_only,
                   std::chrono::milliseconds grace_period)
    : name_(e.name, strnlen(e.name, sizeof(e.name))),
      id_(e.keyspace_id),
      bucket_count_(e.bucket_count),
      index_(base + e.index_offset),
      log_(base + e.log_offset),
      log_size_(e.log_size),
      segment_size_(e.segment_size),
      max_value_size_(e.max_value_size),
      entry_(e),
      persister_(persister),
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

void Keyspace::Recover(uint64_t open_epoch) {
  // Sequences of this open start above every earlier open's (epoch << 40).
  next_sequence_.store((open_epoch << 40) + 1);
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

Result<SegmentGrant> Keyspace::GrantSegment(bool for_delete) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  Result<SegmentGrant> g = segments_->Grant(for_delete);
  if (g.ok()) g->keyspace_id = id_;
  return g;
}

Status Keyspace::SealSegment(const SegmentGrant& grant) {
  return segments_->Seal(grant.segment, grant.grant_id);
}

Status Keyspace::ReturnSegment(const SegmentGrant& grant) {
  return segments_->Return(grant.segment, grant.grant_id);
}

bool Keyspace::FindSlot(std::string_view key, uint64_t hash, Found* out) const {
  const uint64_t home = ix::HomeBucket(hash, bucket_count_);
  const uint16_t fp = ix::Fingerprint(hash);
  for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
    uint64_t* bucket = Bucket(b);
    for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
      const uint64_t v = LoadSlot(&bucket[s]);
      if (v == 0 || ix::UnpackSlot(v).fingerprint != fp) continue;
      if (!SlotInBounds(v)) continue;
      const ix::SlotFields f = ix::UnpackSlot(v);
      rf::RecordView view;
      const uint8_t* rec = log_ + uint64_t{f.offset_units} * ix::kUnit;
      if (!rf::VerifyRecord(rec, uint64_t{f.units} * ix::kUnit, id_, &view)
               .ok() ||
          view.key != key) {
        continue;
      }
      out->slot = &bucket[s];
      out->value = v;
      out->view = view;
      return true;
    }
  }
  return false;
}

Status Keyspace::PersistSlot(uint64_t* slot, uint64_t value) {
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  persister_->Persist(slot, sizeof(*slot));
  return Status::Ok();
}

Result<CommitResult> Keyspace::Commit(const CommitRequest& r) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  if (r.offset % ix::kUnit != 0 || r.length % ix::kUnit != 0 || r.length == 0 ||
      r.length / ix::kUnit > ix::kMaxRecordUnits) {
    return Status::InvalidArgument(
        "commit: offset and length must be non-zero multiples of 64 and a "
        "record at most 4 MiB (offset " +
        std::to_string(r.offset) + ", length " + std::to_string(r.length) +
        ")");
  }
  KV_RETURN_IF_ERROR(
      segments_->ClaimAppend(r.segment, r.grant_id, r.offset, r.length));
  const uint64_t log_off = uint64_t{r.segment} * segment_size_ + r.offset;
  rf::RecordView view;
  Status st = rf::VerifyRecord(log_ + log_off, r.length, id_, &view);
  if (!st.ok()) return Status::Corruption("commit: " + st.message());
  if (rf::RecordSize(view.key.size(), view.value.size()) != r.length) {
    return Status::InvalidArgument(
        "commit: length " + std::to_string(r.length) +
        " is not the record's padded size " +
        std::to_string(rf::RecordSize(view.key.size(), view.value.size())));
  }
  if (view.header.key_hash != r.key_hash) {
    return Status::InvalidArgument(
        "commit: key hash in the request does not match the record's key");
  }
  const bool tombstone = view.tombstone();
  if (tombstone && !view.value.empty()) {
    return Status::InvalidArgument("commit: a tombstone carries no value");
  }
  if (view.value.size() > max_value_size_) {
    return Status::InvalidArgument("commit: value of " +
                                   std::to_string(view.value.size()) +
                                   " bytes exceeds the keyspace limit of " +
                                   std::to_string(max_value_size_));
  }

  const uint64_t hash = view.header.key_hash;
  const uint64_t home = ix::HomeBucket(hash, bucket_count_);
  const uint64_t new_slot = ix::PackSlot(
      {ix::Fingerprint(hash), static_cast<uint16_t>(r.length / ix::kUnit),
       static_cast<uint32_t>(log_off / ix::kUnit)});
  CommitResult res;
  res.tombstone = tombstone;
  res.committed = {view.header.sequence, log_off, r.length};

  std::lock_guard<std::mutex> lock(StripeFor(home));
  Found old;
  const bool exists = FindSlot(view.key, hash, &old);
  if (exists) {
    const ix::SlotFields f = ix::UnpackSlot(old.value);
    res.had_previous = true;
    res.previous = {old.view.header.sequence,
                    uint64_t{f.offset_units} * ix::kUnit,
                    static_cast<uint32_t>(uint64_t{f.units} * ix::kUnit)};
  }
  if (tombstone) {
    if (!exists) return res;
    KV_RETURN_IF_ERROR(PersistSlot(old.slot, 0));  // commit point
    keys_.fetch_sub(1);
  } else if (exists) {
    KV_RETURN_IF_ERROR(PersistSlot(old.slot, new_slot));  // commit point
  } else {
    // Take an empty slot of the neighbourhood. Writers of other home
    // buckets (other stripes) may race for the same empty slot, hence CAS;
    // non-empty slots are only changed under their key's stripe.
    bool placed = false;
    for (uint64_t b = home; b < home + ix::kProbeBuckets && !placed; b++) {
      uint64_t* bucket = Bucket(b);
      for (size_t s = 0; s < ix::kSlotsPerBucket && !placed; s++) {
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n(&bucket[s], &expected, new_slot, false,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
          persister_->Persist(&bucket[s], sizeof(uint64_t));  // commit point
          placed = true;
        }
      }
    }
    if (!placed) {
      return Status::NoSpace(
          "keyspace '" + name_ + "': index full — the " +
          std::to_string(ix::kProbeBuckets * ix::kSlotsPerBucket) +
          " slots this key may use are taken; recreate the keyspace with a "
          "larger index capacity");
    }
    keys_.fetch_add(1);
  }
  // Accounting strictly after the persisted slot change.
  if (!tombstone) segments_->AddLive(r.segment, r.length);
  if (exists) {
    segments_->RemoveLive(
        static_cast<uint32_t>(res.previous.log_offset / segment_size_),
        res.previous.length);
  }
  return res;
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
    bool raced = false;
    bad.clear();
    for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
      const uint64_t* bucket = Bucket(b);
      for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
        const uint64_t v = LoadSlot(&bucket[s]);
        if (v == 0 || ix::UnpackSlot(v).fingerprint != fp) continue;
        auto where = [&] {
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
        if (st.ok()) value->assign(view.value.data(), view.value.size());
        // A slot unchanged across the read means the record stayed live
        // (hence immutable) throughout; otherwise start over.
        if (LoadSlot(&bucket[s]) != v) {
          raced = true;
          continue;
        }
        if (!st.ok()) {
          bad = where() + " (log offset " + std::to_string(off) +
                "): " + st.message();
          continue;
        }
        if (version != nullptr) {
          *version = {view.header.sequence, off,
                      static_cast<uint32_t>(uint64_t{f.units} * ix::kUnit)};
        }
        return Status::Ok();
      }
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
