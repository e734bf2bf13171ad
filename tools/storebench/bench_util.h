// storebench helpers: a multi-threaded timed loop and latency summaries.
#ifndef KV_TOOLS_STOREBENCH_BENCH_UTIL_H_
#define KV_TOOLS_STOREBENCH_BENCH_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kv::storebench {

struct Figures {
  double ops_per_sec = 0;
  double p50_us = 0;
  double p99_us = 0;
  uint64_t ops = 0;
  uint64_t errors = 0;
};

// Runs `ops` calls of op(thread, i) split over `threads` threads (i counts
// per thread); op returns false on error. Times each call.
Figures RunTimed(int threads, uint64_t ops,
                 const std::function<bool(int thread, uint64_t i)>& op);

// The floor under any durable put on this file system: each op appends a
// 128-byte record to a per-thread region of an mmap'ed sparse file in
// `dir` and msyncs the page holding it (a log append made durable). The
// file is removed afterwards.
Figures MsyncFloor(const std::string& dir, int threads, uint64_t ops);

// "user000000000042" — 16-byte keys.
std::string Key(uint64_t i);
// A 100-byte (or `size`) value that encodes i.
std::string Value(uint64_t i, size_t size);

}  // namespace kv::storebench

#endif  // KV_TOOLS_STOREBENCH_BENCH_UTIL_H_
