// Keyspace::Commit — validation and the slot store that makes a put or
// delete visible and durable.
//
// Crash-consistency of a commit (see docs/format.md, "Commit"):
//   put:    store the new slot in an empty slot of the key's buckets, then
//           persist record + buckets as one persist point (the commit
//           point: one msync on a page-granularity file), then clear the
//           old slot without persisting it. A crash can leave a slot whose
//           record is torn, or both slots; Recover() resolves both (the
//           segment was zeroed at grant, sequences order versions).
//           With no empty slot: persist the record, then replace the slot
//           in place and persist it (two persist points, no leftovers).
//   delete: persist the buckets first (an earlier update's unpersisted
//           clear becomes durable, so no older duplicate survives), then
//           clear the slot and persist — the commit point.
//   Space accounting changes only after the commit point, so a segment is
//   freed (and eventually overwritten) only after no durable slot that a
//   recovery would keep points into it.
#include <string>
#include <vector>

#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"
#include "segment_table.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
}  // namespace

bool Keyspace::FindSlot(std::string_view key, uint64_t hash, Found* out) const {
  const uint64_t home = ix::HomeBucket(hash, bucket_count_);
  const uint16_t fp = ix::Fingerprint(hash);
  for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
    uint64_t* bucket = Bucket(b);
    for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
      const uint64_t v = LoadSlot(&bucket[s]);
      if (v == 0 || ix::UnpackSlot(v).fingerprint != fp) continue;
      if (!SlotInBounds(v)) continue;
      rf::RecordView view;
      const uint8_t* rec = log_ + ix::SlotLogOffset(v);
      if (!rf::VerifyRecord(rec, ix::SlotRecordBytes(v), id_, &view).ok() ||
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

uint64_t* Keyspace::TakeEmptySlot(uint64_t home, uint64_t value) {
  for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
    uint64_t* bucket = Bucket(b);
    for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
      uint64_t expected = 0;
      if (__atomic_compare_exchange_n(&bucket[s], &expected, value, false,
                                      __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
        return &bucket[s];
      }
    }
  }
  return nullptr;
}

Result<Keyspace::Prepared> Keyspace::PrepareCommit(const CommitRequest& r) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  if (r.offset % ix::kUnit != 0 || r.length % ix::kUnit != 0 || r.length == 0 ||
      r.length / ix::kUnit > ix::kMaxRecordUnits) {
    return Status::InvalidArgument(
        "commit: offset and length must be non-zero multiples of 64 and a "
        "record at most 4 MiB (offset " +
        std::to_string(r.offset) + ", length " + std::to_string(r.length) +
        ")");
  }
  if (r.condition != Condition::kNone && r.condition != Condition::kIfAbsent &&
      r.condition != Condition::kIfVersion) {
    return Status::InvalidArgument(
        "commit: unknown condition " +
        std::to_string(static_cast<int>(r.condition)));
  }
  KV_RETURN_IF_ERROR(
      segments_->ClaimAppend(r.segment, r.grant_id, r.offset, r.length));
  // ClaimAppend checked offset + length (overflow-safe) against the segment.
  if (r.fence != nullptr) r.fence->Claimed(r.segment, r.offset + r.length);
  Prepared p;
  p.log_off = uint64_t{r.segment} * segment_size_ + r.offset;
  rf::RecordView& view = p.view;
  Status st = rf::VerifyRecord(log_ + p.log_off, r.length, id_, &view,
                               rf::SequenceRule::kUnsealed);
  if (st.IsInvalidArgument()) {
    return Status::InvalidArgument("commit: " + st.message());
  }
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
  if (view.tombstone() && !view.value.empty()) {
    return Status::InvalidArgument("commit: a tombstone carries no value");
  }
  // Checked on the verified header (SealRecord rewrites the header from
  // it), never on bytes the writer may still change.
  if (r.op == CommitOp::kPut && view.tombstone()) {
    return Status::InvalidArgument(
        "commit: COMMIT says put but the record is a tombstone");
  }
  if (r.op == CommitOp::kDelete && !view.tombstone()) {
    return Status::InvalidArgument(
        "commit: COMMIT says delete but the record is a put");
  }
  if (r.deletes_only && !view.tombstone()) {
    return Status::NoSpace(
        "keyspace '" + name_ +
        "' is full: only deletes are accepted (this grant is the delete "
        "reserve)");
  }
  if (view.value.size() > max_value_size_) {
    return Status::InvalidArgument("commit: value of " +
                                   std::to_string(view.value.size()) +
                                   " bytes exceeds the keyspace limit of " +
                                   std::to_string(max_value_size_));
  }
  const uint64_t hash = view.header.key_hash;
  p.home = ix::HomeBucket(hash, bucket_count_);
  p.new_slot = ix::PackSlot({ix::Fingerprint(hash),
                             static_cast<uint16_t>(r.length / ix::kUnit),
                             static_cast<uint32_t>(p.log_off / ix::kUnit)});
  return p;
}

Result<CommitResult> Keyspace::Commit(const CommitRequest& r) {
  Result<Prepared> p = PrepareCommit(r);
  if (!p.ok()) return p.status();
  std::lock_guard<std::mutex> lock(StripeFor(p->home));
  Deferred d;
  bool deferred = false;
  Result<CommitResult> res = CommitLocked(
      r, *p, [] {}, &d, &deferred);
  if (deferred) CompleteDeferred(&d, 1);
  return res;
}

Result<CommitResult> Keyspace::CommitLocked(
    const CommitRequest& r, const Prepared& p,
    const std::function<void()>& before_sync, Deferred* deferred,
    bool* is_deferred) {
  *is_deferred = false;
  const rf::RecordView& view = p.view;
  const bool tombstone = view.tombstone();
  CommitResult res;
  res.tombstone = tombstone;
  Found old;
  const bool exists = FindSlot(view.key, view.header.key_hash, &old);
  if (r.condition == Condition::kIfAbsent && exists) {
    return Status::ConditionFailed("the key exists (version " +
                                   std::to_string(old.view.header.sequence) +
                                   ")");
  }
  if (r.condition == Condition::kIfVersion &&
      (!exists || old.view.header.sequence != r.expected_sequence)) {
    return Status::ConditionFailed(
        "expected version " + std::to_string(r.expected_sequence) +
        (exists ? ", the key is at version " +
                      std::to_string(old.view.header.sequence)
                : ", the key does not exist"));
  }
  if (exists) {
    res.had_previous = true;
    res.previous = {old.view.header.sequence, ix::SlotLogOffset(old.value),
                    static_cast<uint32_t>(ix::SlotRecordBytes(old.value))};
  }
  uint8_t* const record = log_ + p.log_off;
  // The sequence is assigned here, under the key's lock: commit order is
  // sequence order, and the record's CRC now covers it. The record is not
  // reachable from any slot yet, so no reader sees it change.
  Result<uint64_t> next = NextSequence();
  if (!next.ok()) return next.status();
  const uint64_t sequence = *next;
  rf::SealRecord(record, view, sequence);
  res.committed = {sequence, p.log_off, r.length};
  uint64_t* const buckets = Bucket(p.home);
  const size_t buckets_len = ix::kProbeBuckets * ix::kBucketSize;
  if (!tombstone && TakeEmptySlot(p.home, p.new_slot) != nullptr) {
    // Other home buckets' writers (other stripes) may race for the same
    // empty slot, hence CAS; non-empty slots change only under their
    // key's stripe. The commit point (record + buckets persisted) and
    // the old slot's clear are the caller's: CompleteDeferred. Counted
    // live now, so that the segment cannot be freed before.
    segments_->AddLive(r.segment, r.length);
    *deferred = {record, r.length, buckets, exists ? old.slot : nullptr, res};
    *is_deferred = true;
    return res;
  }
  before_sync();
  if (tombstone) {
    if (!exists) return res;
    persister_->Persist(buckets, buckets_len);
    __atomic_store_n(old.slot, 0, __ATOMIC_RELEASE);
    persister_->PersistPair(record, r.length, buckets,
                            buckets_len);  // commit point
    keys_.fetch_sub(1);
  } else if (exists) {
    persister_->Persist(record, r.length);
    KV_RETURN_IF_ERROR(PersistSlot(old.slot, p.new_slot));  // commit point
    segments_->AddLive(r.segment, r.length);
  } else {
    // Not committed: the sealed header must not pass for a committed
    // record (a later scan of the log, a recovery, a replica's catch-up).
    rf::UnsealRecord(record);
    return Status::NoSpace(
        "keyspace '" + name_ + "': index full — the " +
        std::to_string(ix::kProbeBuckets * ix::kSlotsPerBucket) +
        " slots this key may use are taken; recreate the keyspace with a "
        "larger index capacity");
  }
  // Accounting strictly after the persisted slot change.
  if (exists) {
    segments_->RemoveLive(
        static_cast<uint32_t>(res.previous.log_offset / segment_size_),
        res.previous.length);
  }
  return res;
}

void Keyspace::CompleteDeferred(const Deferred* d, size_t n) {
  if (n == 0) return;
  std::vector<Persister::Range> ranges;
  ranges.reserve(2 * n);
  const size_t buckets_len = ix::kProbeBuckets * ix::kBucketSize;
  for (size_t i = 0; i < n; i++) {
    ranges.push_back({d[i].record, d[i].length});
    ranges.push_back({d[i].buckets, buckets_len});
  }
  persister_->PersistRanges(ranges.data(), ranges.size());  // commit point
  for (size_t i = 0; i < n; i++) {
    if (d[i].old_slot == nullptr) {
      keys_.fetch_add(1);
      continue;
    }
    __atomic_store_n(d[i].old_slot, 0, __ATOMIC_RELEASE);  // durable later
    {
      std::lock_guard<std::mutex> pending(pending_mu_);
      pending_clears_.push_back(d[i].old_slot);
    }
    // Accounting strictly after the persisted slot change.
    const Version& prev = d[i].result.previous;
    segments_->RemoveLive(
        static_cast<uint32_t>(prev.log_offset / segment_size_), prev.length);
  }
}

}  // namespace kv::store
