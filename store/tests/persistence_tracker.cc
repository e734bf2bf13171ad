#include "persistence_tracker.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kv::store {
namespace {

// Copies live pool bytes as the hardware would: aligned 8-byte words are
// read whole (atomically), so a slot another thread is storing is never
// torn in the copy. The tracker reads live memory while writers run, as a
// cache flush does; the crash tests are therefore no ThreadSanitizer
// targets (the store's own concurrency tests are).
void CopyLive(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = __atomic_load_n(
        reinterpret_cast<const uint64_t*>(src + i), __ATOMIC_RELAXED);
    std::memcpy(dst + i, &w, 8);
  }
  for (; i < n; i++) dst[i] = src[i];
}

}  // namespace

void PersistenceTracker::Attach(uint8_t* base, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  base_ = base;
  size_ = size;
  durable_.assign(base, base + size);
  count_ = 0;
}

void PersistenceTracker::Persist(const void* addr, size_t len) {
  const Range r{addr, len};
  PersistRanges(&r, 1);
}

void PersistenceTracker::PersistRanges(const Range* ranges, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (base_ == nullptr) return;
  for (size_t i = 0; i < n; i++) {
    const auto* p = static_cast<const uint8_t*>(ranges[i].addr);
    // Persisting memory outside the pool is a store bug.
    if (p < base_ || p + ranges[i].len > base_ + size_) std::abort();
  }
  count_++;
  if (hook_ && !in_hook_) {
    in_hook_ = true;
    hook_(count_);
    in_hook_ = false;
  }
  for (size_t i = 0; i < n; i++) CopyToDurable(ranges[i]);
}

void PersistenceTracker::CopyToDurable(const Range& r) {
  const auto* p = static_cast<const uint8_t*>(r.addr);
  const size_t begin = static_cast<size_t>(p - base_) / kLine * kLine;
  const size_t end =
      std::min(size_, (static_cast<size_t>(p - base_) + r.len + kLine - 1) /
                          kLine * kLine);
  CopyLive(durable_.data() + begin, base_ + begin, end - begin);
}

std::vector<uint8_t> PersistenceTracker::CrashImage(
    Mode mode, std::mt19937_64* rng) const {
  std::vector<uint8_t> image = durable_;
  uint8_t line[kLine];
  for (size_t off = 0; off < size_; off += kLine) {
    const size_t n = std::min(kLine, size_ - off);
    CopyLive(line, base_ + off, n);
    if (std::memcmp(line, durable_.data() + off, n) == 0) continue;
    bool keep = mode == Mode::kAllKept;
    if (mode == Mode::kRandom) keep = (*rng)() & 1;
    if (keep) std::memcpy(image.data() + off, line, n);
  }
  return image;
}

size_t PersistenceTracker::VolatileLines() const {
  size_t n = 0;
  for (size_t off = 0; off < size_; off += kLine) {
    const size_t len = std::min(kLine, size_ - off);
    if (std::memcmp(base_ + off, durable_.data() + off, len) != 0) n++;
  }
  return n;
}

}  // namespace kv::store
