// Histogram: latency samples in nanoseconds, log-linear buckets (values
// under 128 ns exact, then 64 buckets per power of two: every reported
// figure is within 1/64 ≈ 1.6% above the true sample), so that millions of
// operations cost a fixed 30 KiB and per-thread histograms merge exactly.
//
// Thread-safety: none; one per thread, merged after the threads joined.
#ifndef RPKV_TOOLS_KVBENCH_HISTOGRAM_H_
#define RPKV_TOOLS_KVBENCH_HISTOGRAM_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kvbench {

class Histogram {
 public:
  Histogram();

  void Record(uint64_t nanos);
  void Merge(const Histogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const {
    return count_ ? static_cast<double>(sum_) / count_ : 0;
  }

  // The nearest-rank percentile: the smallest bucket bound at or below
  // which a fraction p (0..1) of the samples lie, capped at max(); p <= 0
  // gives min(), p >= 1 max(). 0 when empty.
  uint64_t Percentile(double p) const;

  // Cumulative distribution: (upper bound in ns, fraction of samples at or
  // below it) for every non-empty bucket, ascending; last fraction is 1.
  std::vector<std::pair<uint64_t, double>> Cdf() const;

  // Bucket geometry, exposed for tests.
  static size_t BucketOf(uint64_t nanos);
  static uint64_t BucketUpper(size_t bucket);

 private:
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_HISTOGRAM_H_
