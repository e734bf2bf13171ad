// Keyspace's side of the commit pipeline's stages (commit_pipeline.cc
// runs them): prepare, decide, commit point, publish — and the ordered
// paths (delete, in-place replacement).
//
// Crash-consistency of a commit (see docs/format.md, "Commit" and
// "Commit pipeline"):
//   put:    decide takes an empty slot of the key's buckets (stores it in
//           the local mode, reserves it in the strict one), the commit
//           point persists record + buckets as one persist point (local;
//           strict: the records, then publish stores and persists the
//           slots), then publish clears the old slot without persisting
//           it. A crash can leave a slot whose record is torn, or both
//           slots; Recover() resolves both (the segment was zeroed at
//           grant, sequences order versions).
//           With no empty slot: the record reaches its commit point, then
//           the slot is replaced in place and persisted (no leftovers).
//   delete: persist the buckets first (an earlier update's unpersisted
//           clear becomes durable, so no older duplicate survives), then
//           clear the slot and persist — the commit point.
//   Space accounting changes only after the commit point, so a segment is
//   freed (and eventually overwritten) only after no durable slot that a
//   recovery would keep points into it.
#include <string>
#include <vector>

#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/store/commit_pipeline.h"
#include "kv/store/keyspace.h"
#include "segment_table.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
constexpr size_t kBucketsLen = ix::kProbeBuckets * ix::kBucketSize;
}  // namespace

bool Keyspace::FindSlot(std::string_view key, uint64_t hash, Found* out) const {
  const uint64_t home = ix::HomeBucket(hash, index_->bucket_count());
  const uint16_t fp = ix::Fingerprint(hash);
  for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
    uint64_t* bucket = index_->Bucket(b);
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
  if (r.replica && r.condition != Condition::kNone) {
    return Status::InvalidArgument("commit: a replica record has no condition");
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
  // A writer's record is unsealed (the sequence is ours to assign); a
  // replica's is sealed by the shard's owner, sequence and expiry kept.
  Status st = rf::VerifyRecord(
      log_ + p.log_off, r.length, id_, &view,
      r.replica ? rf::SequenceRule::kCommitted : rf::SequenceRule::kUnsealed);
  if (st.IsInvalidArgument()) {
    return Status::InvalidArgument("commit: " + st.message());
  }
  if (!st.ok()) return Status::Corruption("commit: " + st.message());
  if (rf::RecordSizeOf(view) != r.length) {
    return Status::InvalidArgument("commit: length " +
                                   std::to_string(r.length) +
                                   " is not the record's padded size " +
                                   std::to_string(rf::RecordSizeOf(view)));
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
  if (r.replica && view.header.sequence > kMaxSequence) {
    return Status::InvalidArgument("commit: replica sequence " +
                                   std::to_string(view.header.sequence) +
                                   " is above " + std::to_string(kMaxSequence));
  }
  if (view.value.size() > max_value_size_) {
    return Status::InvalidArgument("commit: value of " +
                                   std::to_string(view.value.size()) +
                                   " bytes exceeds the keyspace limit of " +
                                   std::to_string(max_value_size_));
  }
  const uint64_t hash = view.header.key_hash;
  p.new_slot = ix::PackSlot({ix::Fingerprint(hash),
                             static_cast<uint16_t>(r.length / ix::kUnit),
                             static_cast<uint32_t>(p.log_off / ix::kUnit)});
  return p;
}

Result<CommitResult> Keyspace::Commit(const CommitRequest& r) {
  std::vector<Result<CommitResult>> out;
  pipeline_->Commit(&r, 1, &out, CommitPipeline::Gather::kNo);
  return std::move(out[0]);
}

void Keyspace::Decide(const CommitRequest& r, const Prepared& p,
                      bool store_slot, Decided* d) {
  d->path = Decided::Path::kDone;
  d->status = Status::Ok();
  d->index_full = false;
  const rf::RecordView& view = p.view;
  const bool tombstone = view.tombstone();
  CommitResult& res = d->result;
  res = CommitResult{};
  res.tombstone = tombstone;
  Found old;
  const bool found = FindSlot(view.key, view.header.key_hash, &old);
  // The server's clock decides, under the key's lock: an expired version
  // is absent to the condition (a put-if-absent succeeds, an if-version
  // fails), yet its slot is replaced or cleared like any old version.
  const uint64_t now = NowMs();
  const bool exists = found && !rf::Expired(old.view, now);
  if (r.condition == Condition::kIfAbsent && exists) {
    d->status =
        Status::ConditionFailed("the key exists (version " +
                                std::to_string(old.view.header.sequence) + ")");
    return;
  }
  if (r.condition == Condition::kIfVersion &&
      (!exists || old.view.header.sequence != r.expected_sequence)) {
    d->status = Status::ConditionFailed(
        "expected version " + std::to_string(r.expected_sequence) +
        (exists ? ", the key is at version " +
                      std::to_string(old.view.header.sequence)
                : ", the key does not exist"));
    return;
  }
  res.had_previous = exists;
  if (found) {
    res.previous = {old.view.header.sequence, ix::SlotLogOffset(old.value),
                    static_cast<uint32_t>(ix::SlotRecordBytes(old.value)),
                    old.view.expiry};
  }
  uint8_t* const record = log_ + p.log_off;
  uint64_t sequence = 0;
  uint64_t expiry = 0;
  if (r.replica) {
    // The newest version wins, whatever order the copies arrive in; a
    // stale one must not pass for committed later (a recovery, a scan).
    sequence = view.header.sequence;
    if ((found && old.view.header.sequence >= sequence) ||
        (tombstone && !found)) {
      rf::UnsealRecord(record);
      res.stale = true;
      return;
    }
    // Ours move past it (durably) before it can be reached.
    d->status = AdvanceSequencePast(sequence);
    if (!d->status.ok()) {
      rf::UnsealRecord(record);
      return;
    }
    rf::ResealRecord(record, view);
    expiry = view.expiry;
  } else {
    // The sequence is assigned here, under the key's lock: commit order is
    // sequence order, and the record's CRC now covers it. The record is
    // not reachable from any slot yet, so no reader sees it change.
    Result<uint64_t> next = NextSequence();
    if (!next.ok()) {
      d->status = next.status();
      return;
    }
    sequence = *next;
    rf::SealRecord(record, view, sequence, now);
    expiry = view.expires() ? now + view.expiry : 0;
  }
  res.committed = {sequence, p.log_off, r.length, expiry};
  d->record = record;
  d->length = r.length;
  d->segment = r.segment;
  // The home under the index's current geometry (held shared since the
  // batch began; prepare ran before, maybe before a growth).
  const uint64_t home =
      ix::HomeBucket(view.header.key_hash, index_->bucket_count());
  d->buckets = index_->Bucket(home);
  d->slot_value = p.new_slot;
  d->old_slot = found ? old.slot : nullptr;
  if (!tombstone) {
    uint64_t* slot = index_->TakeEmptySlot(home, p.new_slot, store_slot);
    if (slot != nullptr) {
      // Non-empty slots change only under their key's stripe, which the
      // caller keeps until publish. Counted live now, so that the
      // segment cannot be freed before.
      segments_->AddLive(r.segment, r.length);
      d->slot = slot;
      d->stored = store_slot;
      d->path = Decided::Path::kReserved;
      // After the store: a checkpoint that covers the entry's lsn then
      // covers the slot (the commit log's one ordering rule).
      d->entry = entries_on_ && store_slot
                     ? AppendEntry(p.new_slot, sequence, false)
                     : Persister::Range{nullptr, 0};
      return;
    }
  }
  if (tombstone && !found) return;  // nothing to delete: ok, no change
  if (!tombstone && !found) {
    // Not committed: the sealed header must not pass for a committed
    // record (a later scan of the log, a recovery, a replica's catch-up).
    rf::UnsealRecord(record);
    d->index_full = true;
    d->index_generation = index_->geometry().generation;
    d->status = Status::NoSpace(
        "keyspace '" + name_ + "': the " +
        std::to_string(ix::kProbeBuckets * ix::kSlotsPerBucket) +
        " index slots this key may use are taken");
    return;
  }
  d->entry = {nullptr, 0};
  d->path = Decided::Path::kOrdered;
}

void Keyspace::CompleteOrdered(Decided* d, CommitPoint* point) {
  const bool strict = !point->publish_before_durable();
  uint8_t* const record = d->record;
  uint64_t* const buckets = d->buckets;
  const Persister::Range rec = {record, d->length};
  if (d->result.tombstone && entries_on_ && !strict) {
    // With a commit log: the clear, then the tombstone's entry (after the
    // clear, as a put's after its store); record + entry are the commit
    // point, the cleared bucket is persisted by the next checkpoint. A
    // crash before leaves the key's version on media, and the entry (once
    // durable) clears it at recovery.
    index_->ClearLater(d->old_slot);
    d->entry = AppendEntry(d->slot_value, d->result.committed.sequence, true);
    const Persister::Range pair[2] = {rec, d->entry};
    d->status = point->MakeDurable(pair, d->entry.len != 0 ? 2 : 1);
    keys_.fetch_sub(1);
  } else if (d->result.tombstone) {
    if (strict) {
      // The tombstone durable first: no reader sees the key gone before.
      Status st = point->MakeDurable(&rec, 1);
      if (!st.ok()) {
        rf::UnsealRecord(record);
        d->status = st;
        return;
      }
    }
    persister_->Persist(buckets, kBucketsLen);
    __atomic_store_n(d->old_slot, 0, __ATOMIC_RELEASE);
    const Persister::Range pair[2] = {rec, {buckets, kBucketsLen}};
    if (strict) {
      // With a commit log, an entry of this open's local commits may still
      // name an older version of the key: the tombstone's entry outranks it.
      if (entries_on_) {
        d->entry =
            AppendEntry(d->slot_value, d->result.committed.sequence, true);
      }
      const Persister::Range last[2] = {{buckets, kBucketsLen}, d->entry};
      persister_->PersistRanges(last, d->entry.len != 0 ? 2 : 1);
    } else {
      d->status = point->MakeDurable(pair, 2);  // commit point
    }
    keys_.fetch_sub(1);
  } else {
    Status st = point->MakeDurable(&rec, 1);  // the record before its slot
    if (!st.ok()) {
      rf::UnsealRecord(record);
      d->status = st;
      return;
    }
    (void)PersistSlot(d->old_slot, d->slot_value);  // commit point
    segments_->AddLive(d->segment, d->length);
    NoteExpiry(d->result.committed.expiry_ms);
  }
  // Accounting strictly after the persisted slot change.
  segments_->RemoveLive(
      static_cast<uint32_t>(d->result.previous.log_offset / segment_size_),
      d->result.previous.length);
}

Status Keyspace::ReachCommitPoint(Decided* const* d, size_t n,
                                  CommitPoint* point) {
  std::vector<Persister::Range> ranges;
  ranges.reserve(2 * n);
  for (size_t i = 0; i < n; i++) {
    ranges.push_back({d[i]->record, d[i]->length});
    // The entry stands for the buckets (a recovery replays it); without
    // one (no commit log, or a checkpoint covered the slot) they persist.
    if (d[i]->entry.len != 0) {
      ranges.push_back(d[i]->entry);
    } else if (d[i]->stored && !entries_on_) {
      ranges.push_back({d[i]->buckets, kBucketsLen});
    }
  }
  Status st = point->MakeDurable(ranges.data(), ranges.size());
  if (st.ok()) return st;
  // Not known durable: nothing of it may be acknowledged, nor stay.
  for (size_t i = 0; i < n; i++) {
    if (d[i]->stored) {
      __atomic_store_n(d[i]->slot, 0, __ATOMIC_RELEASE);
    } else {
      index_->ReleaseReserved(d[i]->slot);
    }
    rf::UnsealRecord(d[i]->record);
    segments_->RemoveLive(d[i]->segment, d[i]->length);
    d[i]->path = Decided::Path::kDone;
    d[i]->status = Status(st.code(), "commit point: " + st.message());
  }
  return st;
}

void Keyspace::Publish(Decided* const* d, size_t n) {
  // Strict mode: the slots appear only now, after the commit point, and
  // are persisted before anything is acknowledged.
  std::vector<Persister::Range> buckets;
  for (size_t i = 0; i < n; i++) {
    if (d[i]->stored) continue;
    index_->StoreReserved(d[i]->slot, d[i]->slot_value);
    buckets.push_back({d[i]->buckets, kBucketsLen});
  }
  if (!buckets.empty()) {
    persister_->PersistRanges(buckets.data(), buckets.size());
  }
  for (size_t i = 0; i < n; i++) {
    NoteExpiry(d[i]->result.committed.expiry_ms);
    if (d[i]->old_slot == nullptr) {
      keys_.fetch_add(1);
      continue;
    }
    index_->ClearLater(d[i]->old_slot);
    // Accounting strictly after the persisted slot change.
    const Version& prev = d[i]->result.previous;
    segments_->RemoveLive(
        static_cast<uint32_t>(prev.log_offset / segment_size_), prev.length);
  }
}

}  // namespace kv::store
