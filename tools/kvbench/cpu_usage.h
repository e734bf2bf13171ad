// CPU time of this process (getrusage) and of another process on the same
// machine (/proc/PID/stat), so kvbench can report CPU time per operation
// of the client and of the server beside every figure.
// Thread-safety: pure functions.
#ifndef RPKV_TOOLS_KVBENCH_CPU_USAGE_H_
#define RPKV_TOOLS_KVBENCH_CPU_USAGE_H_

#include "kv/status.h"

namespace kvbench {

struct CpuTimes {
  double user_s = 0;
  double system_s = 0;
  double total() const { return user_s + system_s; }
};

// User and system time of the calling process, all threads.
CpuTimes SelfCpu();

// User and system time of process `pid` (clock-tick resolution, 10 ms).
// Errors: not_found (no such process), corruption (unparsable stat line).
kv::Result<CpuTimes> ProcessCpu(int pid);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_CPU_USAGE_H_
