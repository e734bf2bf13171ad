// Keyspace::Clean — the cleaner (compaction).
//
// Crash-consistency order for each moved record:
//   1. copy the record into the cleaner's segment and persist it;
//   2. under the key's stripe, if the slot still points to the old copy,
//      store + persist the slot pointing to the new copy (atomic switch);
//   3. account; a victim becomes free only after FinishCleaning and the
//      grace period, so in-flight readers of the old copy see it intact or
//      (after reuse) detect the change by CRC/key/sequence and retry.
// A crash between 1 and 2 leaves an unreferenced copy (garbage); a crash
// after 2 leaves the old copy unreferenced. Either way one copy is live.
//
// Expired keys (the expiry sweep, run first by every Clean and by
// kvserver's cleaner each period): an expired version's slot is cleared,
// its record becomes dead bytes, and the segment is then cleaned as any.
// Order: (1) every clear an update deferred is made durable — so that no
// older version of a key can be uncovered by the clear of its expired
// newest one, whatever a crash keeps; (2) under the key's stripe, if the
// slot still holds the expired version, clear it, deferred like an
// update's clear (durable before any segment is reused, by the grant that
// would reuse it); (3) at the end of the sweep, one persist of all of
// them. A crash before (3) leaves some expired slots: still expired, and
// swept again after the next open.
#include <cstring>
#include <vector>

#include "index.h"
#include "kv/index_format.h"
#include "kv/store/keyspace.h"
#include "segment_table.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;
}  // namespace

Status Keyspace::MoveRecord(uint64_t* slot, uint64_t old_value,
                            SegmentGrant* grant, bool* have_grant) {
  const uint64_t off = ix::SlotLogOffset(old_value);
  const uint64_t len = ix::SlotRecordBytes(old_value);
  rf::RecordView view;
  if (!rf::VerifyRecord(log_ + off, len, id_, &view).ok()) {
    return Status::Ok();  // left in place; Check() reports it
  }
  std::lock_guard<std::mutex> lock(StripeFor(view.header.key_hash));
  if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != old_value) {
    return Status::Ok();  // a commit replaced it meanwhile
  }
  // A granted segment may be a returned one with too little room left:
  // seal it and take the next (each round consumes one segment).
  while (!*have_grant || grant->start + len > grant->size) {
    if (*have_grant) {
      KV_RETURN_IF_ERROR(segments_->Seal(grant->segment, grant->grant_id));
    }
    *have_grant = false;
    Result<SegmentGrant> g = GrantZeroed(GrantPurpose::kCleaner);
    if (!g.ok()) return g.status();
    *grant = *g;
    *have_grant = true;
  }
  const uint64_t dst_off = grant->log_offset + grant->start;
  KV_RETURN_IF_ERROR(segments_->ClaimAppend(grant->segment, grant->grant_id,
                                            grant->start, len));
  std::memcpy(log_ + dst_off, log_ + off, len);
  persister_->Persist(log_ + dst_off, len);  // copy durable before switch
  grant->start += len;
  const uint64_t new_slot = ix::PackSlot(
      {ix::UnpackSlot(old_value).fingerprint, ix::UnpackSlot(old_value).units,
       static_cast<uint32_t>(dst_off / ix::kUnit)});
  KV_RETURN_IF_ERROR(PersistSlot(slot, new_slot));  // the switch
  segments_->AddLive(grant->segment, len);
  segments_->RemoveLive(static_cast<uint32_t>(off / segment_size_), len);
  return Status::Ok();
}

void Keyspace::NoteExpiry(uint64_t expiry_ms) {
  if (expiry_ms == 0) return;
  uint64_t cur = next_expiry_.load();
  while (expiry_ms < cur &&
         !next_expiry_.compare_exchange_weak(cur, expiry_ms)) {
  }
}

void Keyspace::ClearExpired(uint64_t* slot, uint64_t value) {
  index_->ClearLater(slot);
  keys_.fetch_sub(1);
  // Accounting after the clear, as an update's: the segment is reused
  // only through a grant, which persists the clear first.
  segments_->RemoveLive(
      static_cast<uint32_t>(ix::SlotLogOffset(value) / segment_size_),
      ix::SlotRecordBytes(value));
}

Result<uint64_t> Keyspace::ReclaimExpired() {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  std::lock_guard<std::mutex> clean_lock(clean_mu_);
  return SweepExpired();
}

uint64_t Keyspace::SweepExpired() {
  // The cleaner is the only mover of slots besides commits (which note
  // their own expiries) and growths (kept out by Reading below): with
  // clean_mu_ held, every expiring version the walk does not clear has its
  // expiry folded into next_expiry_ by the walk or by its commit.
  const uint64_t now = NowMs();
  if (now < next_expiry_.load()) return 0;
  next_expiry_.store(UINT64_MAX);
  // (1) above: before any expired slot is cleared.
  index_->PersistClears();
  uint64_t reclaimed = 0;
  {
    Index::Reading reading(*index_);
    index_->ForEachSlot([&](uint64_t i, uint64_t v) {
      if (!SlotInBounds(v)) return true;
      rf::RecordView view;
      if (!rf::VerifyRecord(log_ + ix::SlotLogOffset(v), ix::SlotRecordBytes(v),
                            id_, &view)
               .ok() ||
          !view.expires()) {
        return true;  // Check() reports a bad record; no expiry: nothing
      }
      if (!rf::Expired(view, now)) {
        NoteExpiry(view.expiry);
        return true;
      }
      std::lock_guard<std::mutex> lock(StripeFor(view.header.key_hash));
      uint64_t* slot = index_->Slot(i);
      // Replaced meanwhile: its commit noted the new version's expiry.
      if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != v) return true;
      ClearExpired(slot, v);  // (2)
      reclaimed++;
      return true;
    });
  }
  if (reclaimed != 0) index_->PersistClears();  // (3)
  return reclaimed;
}

Result<uint32_t> Keyspace::Clean(double max_live_ratio, size_t max_segments) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  std::lock_guard<std::mutex> clean_lock(clean_mu_);
  // Expired versions first: their bytes turn dead, so victims are picked
  // by what is really live, and none of them is copied.
  (void)SweepExpired();
  return CleanVictims(segments_->PickVictims(max_live_ratio, max_segments));
}

Status Keyspace::EvacuateFront(uint32_t end) {
  std::lock_guard<std::mutex> clean_lock(clean_mu_);
  return CleanVictims(segments_->PickFront(end)).status();
}

Result<uint32_t> Keyspace::CleanVictims(const std::vector<uint32_t>& victims) {
  if (victims.empty()) return 0u;
  std::vector<bool> is_victim(segments_->count(), false);
  for (uint32_t v : victims) is_victim[v] = true;

  SegmentGrant grant;
  bool have_grant = false;
  Status st;
  // Slots stay put meanwhile: a growth waits for the cleaner's pass.
  Index::Reading reading(*index_);
  index_->ForEachSlot([&](uint64_t i, uint64_t v) {
    if (!SlotInBounds(v)) return true;
    if (!is_victim[ix::SlotLogOffset(v) / segment_size_]) return true;
    st = MoveRecord(index_->Slot(i), v, &grant, &have_grant);
    return st.ok();
  });
  // Victims whose records all moved become quarantined here; after a
  // failure (no_space) they are simply sealed again.
  for (uint32_t v : victims) segments_->FinishCleaning(v);
  if (have_grant) {
    Status rs = segments_->Return(grant.segment, grant.grant_id);
    if (st.ok()) st = rs;
  }
  if (!st.ok()) return st;
  return static_cast<uint32_t>(victims.size());
}

}  // namespace kv::store
