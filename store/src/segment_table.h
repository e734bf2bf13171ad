// SegmentTable: volatile state of a keyspace's log segments — which are
// free, granted (open), sealed or quarantined — and how many live bytes
// each holds.
//
// Nothing here is persistent: the index is authoritative, and recovery
// rebuilds this table from the slots (a segment a slot points into is
// sealed, any other is free). Live bytes change only after the slot change
// that causes them is persisted, so a segment is never freed (and then
// overwritten) while a durable slot still points into it.
//
// Thread-safety: all methods are thread-safe (one mutex).
#ifndef KV_STORE_SEGMENT_TABLE_H_
#define KV_STORE_SEGMENT_TABLE_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "kv/status.h"
#include "kv/store/options.h"
#include "kv/store/segment.h"

namespace kv::store {

class SegmentTable {
 public:
  using Clock = std::chrono::steady_clock;

  SegmentTable(uint32_t count, uint32_t segment_size,
               std::chrono::milliseconds grace_period);

  // Recovery: `bytes` of a live record in `segment` (before FinishRecovery).
  void RecoverLive(uint32_t segment, uint64_t bytes);
  // Recovery done: the first `under_index` segments belong to the index
  // (a grown index covers them), the others with live bytes are sealed,
  // the rest free.
  void FinishRecovery(uint32_t under_index = 0);

  // Tests: the next Grant takes `segment` if it is free.
  void PreferForTesting(uint32_t segment) { prefer_ = segment; }

  // Index growth: segments [0, n) go to the index. Only free or
  // quarantined ones can (a free one is granted highest-numbered first, so
  // the first ones stay free longest; a quarantined one is as safe to
  // overwrite as to regrant: a reader detects the reuse by CRC), and the
  // grant reserves stay free. no_space otherwise (the log is full).
  // RetireFront(n) with n at or below what the index holds is a no-op.
  Status RetireFront(uint32_t n);
  // Gives segments [n, current) back (a growth that did not commit).
  void UnretireFrom(uint32_t n);

  // Who a grant is for. Two free segments are kept back: the last one
  // for the cleaner only (so that compaction can always run), the one
  // before it for deletes (so that a full keyspace still takes tombstones).
  // A client holding the delete reserve therefore never blocks the
  // cleaner.
  using Purpose = GrantPurpose;
  static constexpr size_t kCleanerReserve = 1;
  static constexpr size_t kDeleteReserve = 1;
  // Grants a segment (a returned partial one first, then a free one,
  // leaving the reserves above `purpose`'s own). no_space when none is
  // left for it.
  Result<SegmentGrant> Grant(Purpose purpose);
  // Validates that [offset, offset + length) lies in the open grant
  // `grant_id` of `segment` at or after its append tail, then advances the
  // tail past it. invalid_argument naming the violated bound otherwise.
  Status ClaimAppend(uint32_t segment, uint64_t grant_id, uint64_t offset,
                     uint64_t length);
  // Writer is done with the segment (full): sealed, or quarantined when
  // nothing in it is live.
  Status Seal(uint32_t segment, uint64_t grant_id);
  // Writer gives back the unused rest; the segment may be granted again
  // from its tail.
  Status Return(uint32_t segment, uint64_t grant_id);

  // Live-byte accounting after a persisted slot change.
  void AddLive(uint32_t segment, uint64_t bytes);
  void RemoveLive(uint32_t segment, uint64_t bytes);

  // Sealed segments whose live bytes are at most max_live_ratio of the
  // segment, least live first, at most `max` of them; marked as being
  // cleaned (not granted, not picked again) until FinishCleaning.
  std::vector<uint32_t> PickVictims(double max_live_ratio, size_t max);
  // The sealed segments among the first `end` (past those the index holds),
  // marked as being cleaned like PickVictims' (index growth makes room).
  std::vector<uint32_t> PickFront(uint32_t end);
  // The cleaner moved everything out of `segment` (or gave up).
  void FinishCleaning(uint32_t segment);

  void FillStats(KeyspaceStats* stats);
  uint32_t count() const { return count_; }
  uint32_t segment_size() const { return segment_size_; }

 private:
  enum class State {
    kFree,
    kOpen,
    kReturned,
    kSealed,
    kCleaning,
    kQuarantine,
    kIndex,  // under the grown index; never granted again
  };
  struct Seg {
    State state = State::kFree;
    uint64_t grant_id = 0;
    uint64_t tail = 0;  // bytes used from the segment start
    uint64_t live = 0;
    Clock::time_point free_at;
  };

  void ReleaseExpiredLocked();
  // The highest-numbered free segment, taken off the free list.
  uint32_t TakeFreeLocked();
  void MaybeQuarantineLocked(uint32_t segment);
  Status CheckGrantLocked(uint32_t segment, uint64_t grant_id) const;

  const uint32_t count_;
  const uint32_t segment_size_;
  const std::chrono::milliseconds grace_;
  std::mutex mu_;
  std::vector<Seg> segs_;
  std::deque<uint32_t> free_;
  std::deque<uint32_t> returned_;
  std::deque<uint32_t> quarantine_;
  uint64_t next_grant_id_ = 1;
  uint32_t under_index_ = 0;  // segments [0, under_index_) are kIndex
  uint32_t prefer_ = UINT32_MAX;
};

}  // namespace kv::store

#endif  // KV_STORE_SEGMENT_TABLE_H_
