// Index: a keyspace's hash index in the pool mapping — its geometry (which
// doubles online), the slot walk, slot reservation, the key stripes and the
// resize lock. Keyspace owns one; everything that touches slots goes
// through it, so "two geometries during a growth" lives in one place.
// Formats: kv/index_format.h (buckets, slots, the header and the readers'
// fence); docs/format.md ("Hash index", "Index growth").
//
// Thread-safety:
//  - Slots are read with acquire loads and stored with release stores by
//    anyone (the commit protocol decides who may change which slot).
//  - The geometry (bucket_count, generation) changes only under the resize
//    lock held exclusively (Resizing). Code that holds slot pointers across
//    steps, or walks the index, holds it shared (Reading) — never while
//    holding a stripe, never twice on one thread (the lock prefers a
//    waiting resizer, so a nested shared lock would deadlock).
//  - Lock-free readers (Keyspace::Get) instead apply the fence: load the
//    geometry, read the neighbourhood, and before concluding "absent"
//    check that the geometry is still the one they used.
#ifndef KV_STORE_SRC_INDEX_H_
#define KV_STORE_SRC_INDEX_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "kv/index_format.h"
#include "kv/store/persister.h"

namespace kv::store {

class Index {
 public:
  // `header` (kIndexHeaderSize bytes at the start of the keyspace's read
  // region) and `buckets` lie in the pool mapping; `bucket_count` and
  // `generation` come from the validated catalog entry.
  Index(uint8_t* header, uint8_t* buckets, uint64_t bucket_count,
        uint64_t generation, Persister* persister);
  ~Index();
  Index(const Index&) = delete;
  Index& operator=(const Index&) = delete;

  // The current geometry, as one acquire load (bucket_count and generation
  // always belong together).
  struct Geometry {
    uint64_t bucket_count = 0;
    uint64_t generation = 0;
  };
  Geometry geometry() const {
    const index_format::IndexHeader h =
        index_format::UnpackIndexWord(word_.load(std::memory_order_acquire));
    return {h.bucket_count, h.generation};
  }
  uint64_t bucket_count() const { return geometry().bucket_count; }
  // Whether the geometry still is `g` (the fence: call after the reads).
  bool Unchanged(const Geometry& g) const {
    return word_.load(std::memory_order_acquire) ==
           index_format::PackIndexWord({g.generation, g.bucket_count});
  }

  uint64_t* Bucket(uint64_t b) const {
    return reinterpret_cast<uint64_t*>(buckets_ +
                                       b * index_format::kBucketSize);
  }
  uint64_t* Slot(uint64_t i) const {
    return reinterpret_cast<uint64_t*>(buckets_) + i;
  }
  uint64_t SlotIndex(const uint64_t* slot) const {
    return static_cast<uint64_t>(slot - Slot(0));
  }
  uint8_t* buckets() const { return buckets_; }
  // Slots physically present in the current geometry.
  uint64_t PhysicalSlots() const {
    return index_format::PhysicalBuckets(bucket_count()) *
           index_format::kSlotsPerBucket;
  }
  // Bytes of the buckets of a geometry of `bucket_count`.
  static uint64_t BytesFor(uint64_t bucket_count) {
    return index_format::PhysicalBuckets(bucket_count) *
           index_format::kBucketSize;
  }

  // Calls fn(i, value) for every non-empty slot of the current geometry
  // in index order until it returns false. The caller holds Reading (or
  // is alone, as recovery is).
  void ForEachSlot(const std::function<bool(uint64_t, uint64_t)>& fn) const;

  // The stripe of a key: a function of its hash that no growth changes
  // (for bucket counts of at least kStripes it is the home bucket's).
  std::mutex& StripeFor(uint64_t hash) const;

  // Takes an empty slot of home's neighbourhood: stores `value` when
  // `store`, else only reserves it (StoreReserved publishes it,
  // ReleaseReserved gives it back). Writers of other home buckets may race
  // for a slot: each first sets the slot's reservation bit. nullptr when
  // every slot is taken. Caller holds Reading from here to the store or
  // release.
  uint64_t* TakeEmptySlot(uint64_t home, uint64_t value, bool store);
  void StoreReserved(uint64_t* slot, uint64_t value);
  void ReleaseReserved(uint64_t* slot);

  // The resize lock (see the header comment), as RAII holders.
  class Reading {
   public:
    explicit Reading(const Index& ix) : ix_(ix) {
      pthread_rwlock_rdlock(&ix_.resize_);
    }
    ~Reading() { pthread_rwlock_unlock(&ix_.resize_); }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;

   private:
    const Index& ix_;
  };
  class Resizing {
   public:
    explicit Resizing(const Index& ix) : ix_(ix) {
      pthread_rwlock_wrlock(&ix_.resize_);
    }
    ~Resizing() { pthread_rwlock_unlock(&ix_.resize_); }
    Resizing(const Resizing&) = delete;
    Resizing& operator=(const Resizing&) = delete;

   private:
    const Index& ix_;
  };

  // --- Growth steps; the caller holds Resizing (keyspace_grow.cc). ---
  // What a doubling moved: slot i's value was copied to slot `to`.
  struct Move {
    uint64_t from = 0;
    uint64_t to = 0;
  };
  // Returns a slot's key hash, or false to leave the slot where it is
  // (its record does not verify: Check reports it).
  using KeyHashOf = std::function<bool(uint64_t value, uint64_t* hash)>;
  // Step 1: copies every slot whose home bucket changes under
  // `new_bucket_count` (a power-of-two multiple of the current one) into
  // its new neighbourhood (new buckets, and the old probe bucket that
  // becomes an ordinary one). The old copies stay, so readers of the
  // current geometry still find every key. The new buckets must be zero.
  // false when a moved slot finds no room (nothing of it is kept: *moves
  // undone) — the old probe bucket still holds every old copy, so a tiny
  // index may need more than a doubling.
  bool CopyMovedSlots(uint64_t new_bucket_count, const KeyHashOf& key_hash_of,
                      std::vector<Move>* moves);
  // Undoes CopyMovedSlots (a growth that did not reach its commit point).
  void UndoCopies(const std::vector<Move>& moves);
  // Step 3, after the commit point: the grown geometry becomes current
  // (reservation bits resized, the header rewritten and persisted).
  void SwitchTo(uint64_t new_bucket_count);
  // Step 4: clears the old positions of moved slots (not persisted here).
  void ClearMovedFrom(const std::vector<Move>& moves);

  // Writes the header for the current geometry and persists it (open,
  // and SwitchTo).
  void PublishHeader();

  // Clears an updated key's old slot now and makes the clear durable
  // later: by PersistClears (a segment grant calls it before the segment
  // the slot pointed into can be rewritten) or PersistAll. A crash in
  // between leaves two versions of the key, which recovery resolves by
  // sequence.
  void ClearLater(uint64_t* slot);
  // Persists the clears ClearLater deferred (one persist point); returns
  // only when every clear taken by any caller so far is durable.
  void PersistClears();
  // Persists the whole index (the deferred clears with it): a clean close.
  void PersistAll();
  // Holds back every PersistClears (and so every segment grant) until the
  // lock is released: for clears the holder makes durable itself (a
  // growth's, after the resize lock is let go).
  std::unique_lock<std::mutex> HoldDeferredClears() {
    return std::unique_lock<std::mutex>(clears_persist_mu_);
  }

 private:
  std::atomic<uint8_t>& ReservedBits(const uint64_t* slot, uint8_t* bit) const;

  uint8_t* const header_;
  uint8_t* const buckets_;
  Persister* const persister_;
  std::atomic<uint64_t> word_;  // PackIndexWord of the current geometry
  std::unique_ptr<std::mutex[]> stripes_;
  // One bit per slot (a byte per bucket): set while a taker holds the
  // empty slot (TakeEmptySlot) until it stored its value. Replaced only
  // under Resizing.
  std::unique_ptr<std::atomic<uint8_t>[]> reserved_;
  mutable pthread_rwlock_t resize_;
  std::mutex clears_mu_;
  std::vector<uint64_t*> clears_;  // cleared, not yet durable
  std::mutex clears_persist_mu_;   // held by PersistClears throughout
};

}  // namespace kv::store

#endif  // KV_STORE_SRC_INDEX_H_
