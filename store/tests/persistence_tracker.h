// PersistenceTracker — the test Persister that models power failure.
//
// It keeps a shadow "durable image" of a memory-mapped pool: Persist(addr,
// len) copies the cache lines covering the range from the live bytes into
// the shadow. CrashImage() returns the pool a power failure would leave
// now: every cache line that differs between live and durable
// independently keeps its new content or reverts to its durable content
// (whole lines, so aligned 8-byte stores stay atomic). Every Persist() is a
// numbered persist point; a hook can run at each point *before* the
// persist takes effect, i.e. with that persist's lines still volatile.
//
// Thread-safety: Persist() is serialized by a mutex; the hook runs under it.
#ifndef KV_STORE_TESTS_PERSISTENCE_TRACKER_H_
#define KV_STORE_TESTS_PERSISTENCE_TRACKER_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <vector>

#include "kv/store/persister.h"

namespace kv::store {

class PersistenceTracker : public Persister {
 public:
  static constexpr size_t kLine = 64;

  // How the volatile lines of a crash image are chosen.
  enum class Mode { kRandom, kAllReverted, kAllKept };

  // Starts tracking [base, base + size); its current bytes count as durable.
  void Attach(uint8_t* base, size_t size);

  void Persist(const void* addr, size_t len) override;
  // One persist point covering all ranges (as on a page-granularity file).
  void PersistRanges(const Range* ranges, size_t n) override;

  // The image a power failure would leave right now.
  std::vector<uint8_t> CrashImage(Mode mode, std::mt19937_64* rng) const;

  // Lines that differ from the durable image (not yet persisted).
  size_t VolatileLines() const;

  // Called at every persist point k (1, 2, ...) before that persist applies.
  void SetHook(std::function<void(uint64_t k)> hook) {
    hook_ = std::move(hook);
  }
  uint64_t persist_count() const { return count_; }

 private:
  void CopyToDurable(const Range& r);

  std::mutex mu_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> durable_;
  uint64_t count_ = 0;
  bool in_hook_ = false;
  std::function<void(uint64_t)> hook_;
};

}  // namespace kv::store

#endif  // KV_STORE_TESTS_PERSISTENCE_TRACKER_H_
