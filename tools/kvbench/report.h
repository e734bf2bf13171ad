// Report: what a kvbench run prints and writes — the table on stdout, the
// --json file (shape documented in README.md: {"config": {...},
// "results": {"read": {...}, ..., "overall": {...}}}, operation types that
// did not run left out) and the latency CDF as gnuplot data.
// Thread-safety: pure functions of their arguments.
#ifndef RPKV_TOOLS_KVBENCH_REPORT_H_
#define RPKV_TOOLS_KVBENCH_REPORT_H_

#include <cstdio>
#include <string>

#include "backend.h"
#include "kv/status.h"
#include "runner.h"

namespace kvbench {

struct Report {
  const RunConfig* config = nullptr;
  const RunResult* result = nullptr;
  std::string backend;   // "rpkv" | "redis"
  std::string server;    // HOST:PORT
  std::string keyspace;  // rpkv only
  std::string wait;      // rpkv only: "poll" | "block"
  std::string label;     // --label, free text for scripts
  Facts server_facts;    // BackendFactory::Describe()
};

void PrintTable(const Report& report, std::FILE* out);

// Errors: io_error naming the file.
kv::Status WriteJson(const Report& report, const std::string& path);

// The latency CDF of every operation type that ran, one gnuplot data block
// per type ("# op NAME" above it; columns latency_us, fraction), for
// --plot and for compare_redis.sh's combined plot. Errors: io_error.
kv::Status WriteCdfData(const Report& report, const std::string& path);

// Writes the run's timeline (RunConfig::timeline_ms) as CSV to `path`:
// one row per bucket, "t_ms,ops,ops_per_sec,errors,mean_us,max_us", t_ms
// the bucket's start after the measured interval began. Errors: io_error.
kv::Status WriteTimeline(const Report& report, const std::string& path);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_REPORT_H_
