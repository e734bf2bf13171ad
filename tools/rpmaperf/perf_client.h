// rpmaperf client: drives one operation type at a fixed queue depth
// against an rpmaperf server and reports latency and throughput.
#ifndef RPKV_TOOLS_RPMAPERF_PERF_CLIENT_H_
#define RPKV_TOOLS_RPMAPERF_PERF_CLIENT_H_

#include <cstdint>
#include <string>

#include "latency_stats.h"
#include "perf_common.h"

namespace rpmaperf {

struct ClientOptions {
  std::string addr = "127.0.0.1";
  std::string port = "7471";
  Op op = Op::kRead;
  uint32_t size = 64;
  uint32_t qd = 1;
  double seconds = 5;
  double warmup_seconds = 1;
  bool busy_poll = true;
};

// Runs the workload; fills *summary. Returns 0 or a negative RPMA_E_* code
// (or 1 for a protocol error, already reported on stderr).
int RunClient(const ClientOptions& options, Summary* summary);

}  // namespace rpmaperf

#endif  // RPKV_TOOLS_RPMAPERF_PERF_CLIENT_H_
