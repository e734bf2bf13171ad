// Runner: the load phase (every key 0..keys-1 written once) and the run
// phase (warm-up, then the measured interval) of one kvbench run, with
// --threads connections, each keeping --qd operations in flight.
//
// Latency of an operation is the time from issuing its round (the --qd
// operations sent together) to the round's last reply: what a caller of a
// batched API waits. A read-modify-write is its read round plus its write
// round. Every read is verified (value.h); a wrong value, an unexpected
// not_found or a failed operation counts as an error of its type.
//
// Thread-safety: Run() owns its threads and joins them before returning.
#ifndef RPKV_TOOLS_KVBENCH_RUNNER_H_
#define RPKV_TOOLS_KVBENCH_RUNNER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backend.h"
#include "histogram.h"
#include "kv/status.h"
#include "workload.h"

namespace kvbench {

struct RunConfig {
  WorkloadSpec spec;
  uint32_t threads = 1;
  uint32_t qd = 1;
  double duration_s = 10;  // measured interval, unless ops > 0
  uint64_t ops = 0;        // total measured operations (0: use duration)
  double warmup_s = 1;
  bool load = true;       // write keys 0..keys-1 before the run
  bool progress = false;  // a progress line on stderr, once a second
  int server_pid = 0;     // > 0: also measure that process's CPU time
  uint32_t pings = 1000;  // round trips timed on one idle connection first
  uint64_t seed = 1;
  uint32_t timeline_ms = 0;  // > 0: RunResult::timeline in buckets this wide
};

// One interval of the measured run, by when its operations completed.
struct TimelineBucket {
  uint64_t ops = 0;
  uint64_t errors = 0;
  uint64_t total_ns = 0;  // summed latency, for the mean
  uint64_t max_ns = 0;
  void Merge(const TimelineBucket& o) {
    ops += o.ops;
    errors += o.errors;
    total_ns += o.total_ns;
    if (o.max_ns > max_ns) max_ns = o.max_ns;
  }
};

struct OpStats {
  Histogram latency;  // ns
  uint64_t errors = 0;
  uint64_t not_found = 0;  // reads of deleted keys (custom mixes only)
  void Merge(const OpStats& o) {
    latency.Merge(o.latency);
    errors += o.errors;
    not_found += o.not_found;
  }
};

struct RunResult {
  std::array<OpStats, kOpTypes> ops;  // index by OpType
  OpStats overall;
  double seconds = 0;        // measured interval
  double client_cpu_s = 0;   // this process, during the interval
  double server_cpu_s = -1;  // --server_pid, during it (-1: unknown)
  Histogram ping;            // ns, one connection, nothing else running
  uint64_t load_ops = 0;
  double load_seconds = 0;
  std::vector<std::string> first_errors;  // up to 5 messages
  bool connection_lost = false;
  // With RunConfig::timeline_ms: bucket i covers completions in
  // [i, i+1) * timeline_ms after the measured interval began.
  std::vector<TimelineBucket> timeline;
};

// Runs the benchmark. Errors: the first connect's error (nothing ran);
// unavailable/corruption when the load phase failed (its first error
// message included). Errors during the run phase are counted in the
// result instead.
kv::Result<RunResult> Run(const RunConfig& config, BackendFactory* factory);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_RUNNER_H_
