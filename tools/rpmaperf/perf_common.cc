#include "perf_common.h"

#include <sched.h>
#include <time.h>

#include <cstdio>

namespace rpmaperf {

bool ParseOp(const std::string& name, Op* op) {
  static const struct {
    const char* name;
    Op op;
  } kOps[] = {{"read", Op::kRead},
              {"write", Op::kWrite},
              {"flush", Op::kFlush},
              {"send", Op::kSend},
              {"atomic", Op::kAtomic}};
  for (const auto& o : kOps) {
    if (name == o.name) {
      *op = o.op;
      return true;
    }
  }
  return false;
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kRead:
      return "read";
    case Op::kWrite:
      return "write";
    case Op::kFlush:
      return "flush";
    case Op::kSend:
      return "send";
    case Op::kAtomic:
      return "atomic";
  }
  return "?";
}

int Report(const char* what, int rc) {
  std::fprintf(stderr, "rpmaperf: %s: %s\n", what, rpma_err_2str(rc));
  return rc;
}

uint64_t NowNanos() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

int NextCompletions(struct rpma_cq* cq, bool busy, struct ibv_wc* wc, int n,
                    int* got) {
  for (;;) {
    int rc = rpma_cq_get_wc(cq, n, wc, got);
    if (rc == 0) return 0;
    if (rc != RPMA_E_NO_COMPLETION) return rc;
    if (busy) {
      // Give the provider's progress threads the core: on a small machine
      // a pure spin starves them (measured: qd 32 fell from 500k to 60k/s).
      sched_yield();
    } else {
      rc = rpma_cq_wait(cq);
      // A wakeup may find the queue empty (spurious); NO_COMPLETION from
      // the wait itself only happens on a non-blocking fd.
      if (rc < 0 && rc != RPMA_E_NO_COMPLETION) return rc;
    }
  }
}

}  // namespace rpmaperf
