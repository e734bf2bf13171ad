#include "latency_stats.h"

#include <algorithm>
#include <cmath>

namespace rpmaperf {

LatencyStats::LatencyStats(size_t expected_samples) {
  samples_.reserve(expected_samples);
}

uint64_t Percentile(const std::vector<uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t idx = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(idx, sorted.size() - 1)];
}

Summary LatencyStats::Summarize(double seconds, uint64_t bytes_per_op) {
  std::sort(samples_.begin(), samples_.end());
  Summary s;
  s.ops = samples_.size();
  s.seconds = seconds;
  if (seconds > 0) {
    s.ops_per_sec = static_cast<double>(s.ops) / seconds;
    s.mb_per_sec = s.ops_per_sec * static_cast<double>(bytes_per_op) / 1e6;
  }
  s.p50_us = static_cast<double>(Percentile(samples_, 50)) / 1e3;
  s.p99_us = static_cast<double>(Percentile(samples_, 99)) / 1e3;
  s.max_us = samples_.empty() ? 0 : static_cast<double>(samples_.back()) / 1e3;
  return s;
}

}  // namespace rpmaperf
