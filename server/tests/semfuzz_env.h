// The world commit_semantic_fuzzer runs in: an in-process kvserver on a
// fresh small pool per input, raw protocol clients that live as long as
// the process, and a read-only view of the pool for checking the store
// between steps.
//
// SemServer: Start() creates a new pool file (removing the old one), opens
// kv::server::Server on 127.0.0.1:<a port picked once per process> and
// runs it on a thread; Stop() shuts it down (every session ends, the pool
// is closed cleanly). The cleaner never runs (threshold 1.0), so records
// stay where they were committed and a run depends only on its input.
//
// StoreView: maps the pool file read-only (no lock: the server holds the
// writer's flock) and opens it with Pool::OpenOn, read-only: Check() and
// Get() see exactly the bytes the server wrote, through the store's own
// verification code. Meant for a quiescent moment (no commit in flight).
//
// Violation(): prints the message to the real stderr (kept even when
// libFuzzer discards fd 2) and traps, so libFuzzer saves the input.
// Thread-safety: one fuzzing thread.
#ifndef KV_SERVER_TESTS_SEMFUZZ_ENV_H_
#define KV_SERVER_TESTS_SEMFUZZ_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "kv/status.h"
#include "kv/store/pool.h"

namespace kv::server {
class Server;
}

namespace kv::semfuzz {

inline constexpr uint64_t kPoolSize = 1u << 20;
// Segment sizes an input may pick: many small segments (refills, reuse)
// or a few large ones (the log fills: no_space, the delete reserve).
inline constexpr uint32_t kSmallSegment = 8192;
inline constexpr uint32_t kLargeSegment = 65536;
inline constexpr uint64_t kIndexCapacity = 64;

// Called once from LLVMFuzzerInitialize: keeps a copy of stderr for
// reports, picks the pool path and port, selects the tcp provider.
void InitProcess();
[[noreturn]] void Violation(const std::string& what);
// Prints a line to the kept stderr when SEMFUZZ_VERBOSE is set.
void Trace(const std::string& line);
bool Verbose();

class SemServer {
 public:
  SemServer();
  ~SemServer();
  // Violation() when the server cannot be started (not an input's fault,
  // but nothing can be fuzzed without it).
  void Start(bool group_commit, uint32_t segment_size);
  void Stop();
  int port() const;
  const std::string& pool_path() const;

 private:
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
  int stop_fd_ = -1;
};

class StoreView {
 public:
  // not_found / corruption / io_error as Pool::OpenOn reports them.
  static Result<std::unique_ptr<StoreView>> Open(const std::string& path);
  store::Keyspace* keyspace() const { return keyspace_.get(); }
  store::CheckReport Check() { return pool_->Check(); }
  ~StoreView();

 private:
  std::unique_ptr<store::Pool> pool_;
  std::shared_ptr<store::Keyspace> keyspace_;
};

}  // namespace kv::semfuzz

#endif  // KV_SERVER_TESTS_SEMFUZZ_ENV_H_
