// Keyspace::GrowIndex — the index doubles online (docs/format.md, "Index
// growth").
//
// Why a stop-the-world doubling in place: bucket b splits into b and
// b + bucket_count by one more hash bit (HomeBucket), so the doubled index
// is the old one with new buckets appended — a reader holding the old
// bucket_count still reads inside the index, index_offset never changes,
// and only the slots whose home moved (about half) are copied. Commits
// wait for the copy, which reads one record header per slot (the pause is
// measured in store/README.md, "Index growth"); lock-free readers go on
// throughout.
//
// Steps, under the index's resize lock held exclusively (no commit holds a
// slot between decide and publish, no cleaner move runs):
//   0. (before the lock, commits going on) records in sealed segments the
//      doubled index needs are moved out, as the cleaner moves them;
//   1. the log's first segments that the doubled index covers go to the
//      index (only free or quarantined ones: the log grants its highest
//      segments first), and the new buckets are zeroed;
//   2. every slot whose home changes is copied into its new neighbourhood;
//      the new buckets and the copies persisted (one persist); the old
//      copies stay, so readers of the old geometry still find every key;
//   3. commit point: the catalog entry's bucket_count and generation (the
//      growth sink: a two-copy entry update);
//   4. the doubled geometry becomes current and the index header is
//      rewritten (the fence for readers of the old geometry);
//   5. the moved slots' old positions are cleared — and persisted after the
//      resize lock is released (commits resume), before any segment can
//      be rewritten (as an update's deferred clears).
// A crash before 3 leaves the old geometry, with copies outside their
// key's buckets in the old probe bucket (and in segments that recovery
// frees again, zeroed at their next grant); a crash between 3 and 5 leaves
// the old positions as copies outside their key's buckets. An unclean
// open clears every slot outside its key's buckets (RepairAfterCrash), so
// either way one slot per key remains and nothing acknowledged is lost.
#include <chrono>
#include <cstring>

#include "index.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/keyspace.h"
#include "segment_table.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
namespace rf = kv::record_format;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

uint32_t Keyspace::SegmentsUnderIndex(uint64_t bucket_count) const {
  // The index starts before the log: where it ends, in bytes from the
  // log's start (negative while it has not reached the log).
  const int64_t end_from_log =
      (index_->buckets() - log_) +
      static_cast<int64_t>(Index::BytesFor(bucket_count));
  if (end_from_log <= 0) return 0;
  const uint64_t segs =
      (static_cast<uint64_t>(end_from_log) + segment_size_ - 1) / segment_size_;
  return segs > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(segs);
}

bool Keyspace::NeedsGrowth() const {
  const double slots =
      static_cast<double>(index_->bucket_count() * ix::kSlotsPerBucket);
  return static_cast<double>(keys_.load()) > kGrowLoad * slots;
}

Status Keyspace::GrowIndex() {
  return GrowIndexFrom(index_->geometry().generation);
}

void Keyspace::MaybeGrow() {
  if (read_only_ || !NeedsGrowth()) return;
  const int64_t now = NowNs();
  if (now < next_auto_growth_ns_.load()) return;
  if (!GrowIndexFrom(index_->geometry().generation).ok()) {
    next_auto_growth_ns_.store(now + 1'000'000'000);
  }
}

Status Keyspace::GrowIndexFrom(uint64_t generation) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  std::lock_guard<std::mutex> one_growth(grow_mu_);
  if (index_->geometry().generation != generation) return Status::Ok();
  // Room first, while commits go on: records in the sealed segments a
  // doubling would take move out, as the cleaner moves them. (A segment a
  // writer holds cannot move: then the log is full, and RetireFront says
  // so.)
  (void)EvacuateFront(SegmentsUnderIndex(2 * index_->bucket_count()));
  Status st;
  uint64_t old_bytes = 0;
  std::unique_lock<std::mutex> clears_durable;
  {
    Index::Resizing resizing(*index_);
    old_bytes = Index::BytesFor(index_->bucket_count());
    // Twice the buckets; four or eight times when a doubling cannot place
    // every moved slot (the old probe bucket keeps its old copies until
    // the commit point: only tiny indexes run into it).
    for (uint64_t factor = 2; factor <= 8; factor *= 2) {
      st = GrowTo(index_->bucket_count() * factor, generation);
      if (st.code() != StatusCode::kBusy) break;
    }
    // Step 5's clears are made durable after commits resume, as an
    // update's deferred clears are: taken before the resize lock is let
    // go, so that no segment grant (Index::PersistClears waits for it)
    // can rewrite a segment a cleared slot pointed into before they are.
    if (st.ok()) clears_durable = index_->HoldDeferredClears();
  }
  if (!st.ok()) return st;
  persister_->Persist(index_->buckets(), old_bytes);
  growths_.fetch_add(1);
  return st;
}

Status Keyspace::GrowTo(uint64_t n2, uint64_t generation) {
  const uint64_t n = index_->bucket_count();
  if (n2 > (uint64_t{1} << 32)) {
    return Status::NoSpace("keyspace '" + name_ +
                           "': the index is at its largest (2^32 buckets)");
  }
  const uint32_t under_old = SegmentsUnderIndex(n);
  // 1. Room: the log's first segments, then zeroed new buckets.
  Status st = segments_->RetireFront(SegmentsUnderIndex(n2));
  if (!st.ok()) {
    return Status(st.code(), "keyspace '" + name_ + "': " + st.message());
  }
  // Buckets will overwrite those segments: no commit log entry a recovery
  // reads may name a record there (a tombstone's least of all). No commit
  // is between its slot store and its entry now (they hold Reading).
  if (entries_on_) Checkpoint();
  uint8_t* const fresh = index_->buckets() + Index::BytesFor(n);
  const uint64_t fresh_len = Index::BytesFor(n2) - Index::BytesFor(n);
  std::memset(fresh, 0, fresh_len);  // persisted with the copies
  // 2. Copies of the slots whose home moves.
  std::vector<Index::Move> moves;
  const bool placed = index_->CopyMovedSlots(
      n2,
      [this](uint64_t v, uint64_t* hash) {
        if (!SlotInBounds(v)) return false;
        rf::RecordHeader h;
        std::memcpy(&h, log_ + ix::SlotLogOffset(v), sizeof(h));
        if (ix::Fingerprint(h.key_hash) != ix::UnpackSlot(v).fingerprint) {
          return false;  // not a committed record of this slot: Check's
        }
        *hash = h.key_hash;
        return true;
      },
      &moves);
  // The old probe bucket (an ordinary one now) and everything after it.
  uint64_t* const changed = index_->Bucket(n);
  const uint64_t changed_len = Index::BytesFor(n2) - n * ix::kBucketSize;
  if (!placed) {
    segments_->UnretireFrom(under_old);
    return Status::Busy("keyspace '" + name_ +
                        "': index growth found no free slot for a moved key "
                        "in its new buckets; nothing changed");
  }
  persister_->Persist(changed, changed_len);
  // 3. The commit point.
  st = growth_sink_ ? growth_sink_(n2, generation + 1) : Status::Ok();
  if (!st.ok()) {
    index_->UndoCopies(moves);
    persister_->Persist(changed, changed_len);
    segments_->UnretireFrom(under_old);
    return Status(
        st.code(),
        "keyspace '" + name_ + "': recording the grown index: " + st.message());
  }
  // 4. Current, and published to remote readers.
  index_->SwitchTo(n2);
  // 5. The old positions of what moved (persisted by the caller once
  // commits may resume).
  index_->ClearMovedFrom(moves);
  return Status::Ok();
}

}  // namespace kv::store
