// LatencyStats: per-operation latency samples and the figures rpmaperf
// prints (p50/p99, ops/s, MB/s). Not thread-safe: one per client thread.
#ifndef RPKV_TOOLS_RPMAPERF_LATENCY_STATS_H_
#define RPKV_TOOLS_RPMAPERF_LATENCY_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rpmaperf {

struct Summary {
  uint64_t ops = 0;
  double seconds = 0;
  double ops_per_sec = 0;
  double mb_per_sec = 0;  // payload bytes / 1e6 per second
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

class LatencyStats {
 public:
  explicit LatencyStats(size_t expected_samples = 1 << 20);
  void Add(uint64_t nanos) { samples_.push_back(nanos); }
  size_t count() const { return samples_.size(); }
  // Sorts the samples; `bytes_per_op` converts ops into MB/s.
  Summary Summarize(double seconds, uint64_t bytes_per_op);

 private:
  std::vector<uint64_t> samples_;
};

// Nearest-rank percentile of sorted samples (p in [0, 100]); 0 if empty.
uint64_t Percentile(const std::vector<uint64_t>& sorted, double p);

}  // namespace rpmaperf

#endif  // RPKV_TOOLS_RPMAPERF_LATENCY_STATS_H_
