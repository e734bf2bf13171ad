#include "histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kvbench {
namespace {

constexpr int kSubBits = 6;                    // 64 buckets per octave
constexpr uint64_t kExact = 2ull << kSubBits;  // 0..127 ns are exact
// Octaves 7..63 of bit width, 64 buckets each, after the exact ones.
constexpr size_t kBuckets = kExact + (64 - kSubBits - 1) * (1ull << kSubBits);

}  // namespace

size_t Histogram::BucketOf(uint64_t v) {
  if (v < kExact) return v;
  // shift so that the leading 7 bits remain: m in [64, 128).
  int shift = std::bit_width(v) - (kSubBits + 1);
  uint64_t m = v >> shift;
  return kExact + (shift - 1) * (1ull << kSubBits) + (m - (1ull << kSubBits));
}

uint64_t Histogram::BucketUpper(size_t b) {
  if (b < kExact) return b;
  size_t rel = b - kExact;
  int shift = static_cast<int>(rel >> kSubBits) + 1;
  uint64_t m = (rel & ((1ull << kSubBits) - 1)) + (1ull << kSubBits);
  if (shift + kSubBits + 1 >= 64 && m == (2ull << kSubBits) - 1) {
    return UINT64_MAX;
  }
  return ((m + 1) << shift) - 1;
}

Histogram::Histogram() : buckets_(kBuckets, 0) {}

void Histogram::Record(uint64_t nanos) {
  buckets_[BucketOf(nanos)]++;
  count_++;
  sum_ += nanos;
  min_ = std::min(min_, nanos);
  max_ = std::max(max_, nanos);
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < kBuckets; i++) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t Histogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (p <= 0) return min_;
  if (p >= 1) return max_;
  uint64_t rank = static_cast<uint64_t>(std::ceil(p * count_));
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; b++) {
    seen += buckets_[b];
    if (seen >= rank) return std::clamp(BucketUpper(b), min_, max_);
  }
  return max_;
}

std::vector<std::pair<uint64_t, double>> Histogram::Cdf() const {
  std::vector<std::pair<uint64_t, double>> out;
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets && seen < count_; b++) {
    if (buckets_[b] == 0) continue;
    seen += buckets_[b];
    out.emplace_back(std::min(BucketUpper(b), max_),
                     static_cast<double>(seen) / count_);
  }
  return out;
}

}  // namespace kvbench
