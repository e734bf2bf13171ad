#include "index.h"

#include <cstring>

#include "index_slots.h"

namespace kv::store {
namespace {
namespace ix = kv::index_format;
constexpr size_t kStripes = 1024;
}  // namespace

Index::Index(uint8_t* header, uint8_t* buckets, uint64_t bucket_count,
             uint64_t generation, Persister* persister)
    : header_(header),
      buckets_(buckets),
      persister_(persister),
      word_(ix::PackIndexWord({generation, bucket_count})),
      stripes_(new std::mutex[kStripes]),
      reserved_(new std::atomic<uint8_t>[ix::PhysicalBuckets(bucket_count)]()) {
  // Prefer a waiting resizer: under a steady stream of commits (each
  // holding the lock shared) a reader-preferring lock would never grow.
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr,
                                PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&resize_, &attr);
  pthread_rwlockattr_destroy(&attr);
}

Index::~Index() { pthread_rwlock_destroy(&resize_); }

void Index::ForEachSlot(
    const std::function<bool(uint64_t, uint64_t)>& fn) const {
  const uint64_t n = PhysicalSlots();
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t v = LoadSlot(Slot(i));
    if (v != 0 && !fn(i, v)) return;
  }
}

std::mutex& Index::StripeFor(uint64_t hash) const {
  return stripes_[(hash >> 32) % kStripes];
}

std::atomic<uint8_t>& Index::ReservedBits(const uint64_t* slot,
                                          uint8_t* bit) const {
  const uint64_t i = SlotIndex(slot);
  *bit = static_cast<uint8_t>(1u << (i % ix::kSlotsPerBucket));
  return reserved_[i / ix::kSlotsPerBucket];
}

uint64_t* Index::TakeEmptySlot(uint64_t home, uint64_t value, bool store) {
  for (uint64_t b = home; b < home + ix::kProbeBuckets; b++) {
    uint64_t* bucket = Bucket(b);
    for (size_t s = 0; s < ix::kSlotsPerBucket; s++) {
      if (LoadSlot(&bucket[s]) != 0) continue;
      uint8_t bit = 0;
      std::atomic<uint8_t>& bits = ReservedBits(&bucket[s], &bit);
      if ((bits.fetch_or(bit, std::memory_order_acq_rel) & bit) != 0) {
        continue;  // another writer holds it
      }
      if (LoadSlot(&bucket[s]) != 0) {  // taken and stored meanwhile
        bits.fetch_and(static_cast<uint8_t>(~bit), std::memory_order_release);
        continue;
      }
      if (store) StoreReserved(&bucket[s], value);
      return &bucket[s];
    }
  }
  return nullptr;
}

void Index::StoreReserved(uint64_t* slot, uint64_t value) {
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  ReleaseReserved(slot);
}

void Index::ReleaseReserved(uint64_t* slot) {
  uint8_t bit = 0;
  ReservedBits(slot, &bit)
      .fetch_and(static_cast<uint8_t>(~bit), std::memory_order_release);
}

bool Index::CopyMovedSlots(uint64_t n2, const KeyHashOf& key_hash_of,
                           std::vector<Move>* moves) {
  const uint64_t n = bucket_count();
  // First which slots move (a copy placed in the old probe bucket must not
  // be taken for one of its residents), then where.
  struct Moving {
    uint64_t from;
    uint64_t new_home;
  };
  std::vector<Moving> moving;
  const uint64_t slots = ix::PhysicalBuckets(n) * ix::kSlotsPerBucket;
  for (uint64_t i = 0; i < slots; i++) {
    const uint64_t v = LoadSlot(Slot(i));
    uint64_t hash = 0;
    if (v == 0 || !key_hash_of(v, &hash)) continue;
    const uint64_t home = ix::HomeBucket(hash, n);
    const uint64_t b = i / ix::kSlotsPerBucket;
    if (b < home || b >= home + ix::kProbeBuckets) continue;  // Check's
    const uint64_t new_home = ix::HomeBucket(hash, n2);
    if (new_home != home) moving.push_back({i, new_home});
  }
  moves->clear();
  moves->reserve(moving.size());
  for (const Moving& m : moving) {
    const uint64_t v = LoadSlot(Slot(m.from));
    // The same place relative to the home bucket when free (it is, but
    // in the old probe bucket), else any free slot of the neighbourhood.
    const uint64_t old_home = m.new_home & (n - 1);
    const uint64_t same =
        (m.new_home + (m.from / ix::kSlotsPerBucket - old_home)) *
            ix::kSlotsPerBucket +
        m.from % ix::kSlotsPerBucket;
    uint64_t to = same;
    bool room = LoadSlot(Slot(to)) == 0;
    const uint64_t first = m.new_home * ix::kSlotsPerBucket;
    const uint64_t end = first + ix::kProbeBuckets * ix::kSlotsPerBucket;
    for (uint64_t j = first; !room && j < end; j++) {
      if (LoadSlot(Slot(j)) == 0) {
        to = j;
        room = true;
      }
    }
    {
      if (!room) {
        UndoCopies(*moves);
        moves->clear();
        return false;
      }
    }
    __atomic_store_n(Slot(to), v, __ATOMIC_RELEASE);
    moves->push_back({m.from, to});
  }
  return true;
}

void Index::UndoCopies(const std::vector<Move>& moves) {
  for (const Move& m : moves) __atomic_store_n(Slot(m.to), 0, __ATOMIC_RELEASE);
}

void Index::SwitchTo(uint64_t n2) {
  const Geometry g = geometry();
  reserved_.reset(new std::atomic<uint8_t>[ix::PhysicalBuckets(n2)]());
  word_.store(ix::PackIndexWord({g.generation + 1, n2}),
              std::memory_order_release);
  PublishHeader();
}

void Index::ClearMovedFrom(const std::vector<Move>& moves) {
  for (const Move& m : moves) {
    __atomic_store_n(Slot(m.from), 0, __ATOMIC_RELEASE);
  }
}

void Index::ClearLater(uint64_t* slot) {
  __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
  std::lock_guard<std::mutex> lock(clears_mu_);
  clears_.push_back(slot);
}

void Index::PersistClears() {
  // Held until the clears are durable: a concurrent caller that found the
  // list empty must not go on to rewrite a segment while clears another
  // caller took are still being persisted.
  std::lock_guard<std::mutex> persisting(clears_persist_mu_);
  std::vector<uint64_t*> slots;
  {
    std::lock_guard<std::mutex> lock(clears_mu_);
    slots.swap(clears_);
  }
  if (slots.empty()) return;
  std::vector<Persister::Range> ranges;
  ranges.reserve(slots.size());
  for (uint64_t* slot : slots) ranges.push_back({slot, sizeof(uint64_t)});
  persister_->PersistRanges(ranges.data(), ranges.size());
}

void Index::PersistAll() {
  std::lock_guard<std::mutex> persisting(clears_persist_mu_);
  {
    std::lock_guard<std::mutex> lock(clears_mu_);
    clears_.clear();  // covered by the whole-index persist below
  }
  persister_->Persist(buckets_, BytesFor(bucket_count()));
}

void Index::PublishHeader() {
  const Geometry g = geometry();
  uint8_t bytes[ix::kIndexHeaderSize];
  ix::EncodeIndexHeader({g.generation, g.bucket_count}, bytes);
  std::memcpy(header_, bytes, sizeof(bytes));
  persister_->Persist(header_, sizeof(bytes));
}

}  // namespace kv::store
