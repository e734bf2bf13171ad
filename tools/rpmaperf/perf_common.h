// What rpmaperf's client and server share: the operation set, the private
// data exchanged at connect time, op_context tagging and error reporting.
#ifndef RPKV_TOOLS_RPMAPERF_PERF_COMMON_H_
#define RPKV_TOOLS_RPMAPERF_PERF_COMMON_H_

#include <librpma.h>

#include <cstdint>
#include <string>

namespace rpmaperf {

enum class Op : uint8_t { kRead = 1, kWrite, kFlush, kSend, kAtomic };

// Parses "read|write|flush|send|atomic"; false if unknown.
bool ParseOp(const std::string& name, Op* op);
const char* OpName(Op op);

constexpr uint32_t kMagic = 0x46505052;  // "RPPF"
constexpr uint32_t kMaxQd = 1024;
constexpr uint32_t kMaxSize = 64u << 20;

// Client -> server (connect private data).
struct Hello {
  uint32_t magic;
  uint8_t op;
  uint8_t reserved[3];
  uint32_t size;
  uint32_t qd;
};

// Server -> client (accept private data): the region descriptor and the
// server's peer configuration descriptor, each prefixed by its length.
constexpr size_t kMaxReplyDesc = 64;
struct Reply {
  uint32_t magic;
  uint8_t mr_desc_size;
  uint8_t pcfg_desc_size;
  uint8_t mr_desc[kMaxReplyDesc];
  uint8_t pcfg_desc[8];
};

// op_context encoding: slot index and whether the completion ends an op.
inline const void* Tag(uint32_t slot, bool ends_op) {
  return reinterpret_cast<const void*>((uintptr_t{slot} << 1) |
                                       (ends_op ? 1 : 0));
}
inline uint32_t TagSlot(uint64_t wr_id) {
  return static_cast<uint32_t>(wr_id >> 1);
}
inline bool TagEndsOp(uint64_t wr_id) { return (wr_id & 1) != 0; }

// Prints "rpmaperf: <what>: <librpma text>" to stderr; returns rc.
int Report(const char* what, int rc);

#define RPMAPERF_TRY(call)                            \
  do {                                                \
    int rpmaperf_rc_ = (call);                        \
    if (rpmaperf_rc_ < 0) {                           \
      return ::rpmaperf::Report(#call, rpmaperf_rc_); \
    }                                                 \
  } while (0)

uint64_t NowNanos();

// Waits for the next completion on `cq`: polls (yielding the CPU between
// empty polls), or (busy=false)
// sleeps in rpma_cq_wait() when the queue is empty. Returns the count in
// *got, or a negative RPMA_E_* code.
int NextCompletions(struct rpma_cq* cq, bool busy, struct ibv_wc* wc, int n,
                    int* got);

}  // namespace rpmaperf

#endif  // RPKV_TOOLS_RPMAPERF_PERF_COMMON_H_
