// commit_semantic_fuzzer: a libFuzzer target that drives real protocol
// sequences — one-sided record writes, COMMIT (valid and with fuzzed
// segment / grant id / offset / length / key hash / op / condition /
// expected sequence), REFILL, INFO, BYE, vanishing clients — from three raw
// clients against an in-process kvserver on a fresh 1 MiB pool with 8 or
// 64 KiB segments (semfuzz_env.h), and checks after every step:
//  - every reply is what the reference model (semfuzz_model.h) predicts:
//    a COMMIT the documented rules refuse (outside the grant, before its
//    tail, another connection's grant, bad record...) is never
//    acknowledged, a valid one is (or says no_space), acks carry the
//    record's length, log offset and a fresh increasing sequence;
//  - no grant covers a live acknowledged record or a segment another
//    connection holds;
//  - the store, read through a read-only view of the pool, passes
//    Pool::Check(), every acknowledged key reads back its acknowledged
//    value, deleted / never-put keys are absent and no other key exists;
//  - at the end: the server still answers every client, shuts down
//    cleanly, and the pool reopened writable still holds exactly the
//    acknowledged keys.
// A violation prints "commit_semantic_fuzzer VIOLATION: ..." and traps.
//
// Input: byte 0: bit 0 turns group commit off, bit 1 picks 64 KiB segments
// (a log of a few segments) instead of 8 KiB; then up to 48 ops, each an
// op byte (low 3 bits: put, delete, fuzzed commit, refill, info, bye +
// reconnect, vanish + reconnect, write-only; bits 3-4: client) and its
// argument bytes (missing bytes read as 0). See Runner::Op below.
// The server's own log is discarded (libFuzzer -close_fd_mask=2 is added
// unless SEMFUZZ_VERBOSE is set, which also traces every step).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "raw_client.h"
#include "semfuzz_env.h"
#include "semfuzz_runner.h"

using namespace kv::semfuzz;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  InitProcess();
  if (Verbose()) return 0;
  static std::vector<char*> args;
  static char quiet[] = "-close_fd_mask=2";
  args.assign(*argv, *argv + *argc);
  args.push_back(quiet);
  args.push_back(nullptr);
  *argc += 1;
  *argv = args.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static SemServer* server = new SemServer();
  static std::vector<std::unique_ptr<kv::e2e::RawClient>>* clients = [] {
    auto* v = new std::vector<std::unique_ptr<kv::e2e::RawClient>>();
    for (int i = 0; i < kClients; i++) {
      v->push_back(std::make_unique<kv::e2e::RawClient>());
    }
    return v;
  }();
  Input in{data, size};
  const uint8_t config = in.U8();
  server->Start(/*group_commit=*/(config & 1) == 0,
                (config & 2) ? kLargeSegment : kSmallSegment);
  {
    std::vector<kv::e2e::RawClient*> raw;
    for (auto& c : *clients) raw.push_back(c.get());
    Runner run(server, raw);
    for (size_t i = 0; i < kMaxOps && !in.empty(); i++) run.Op(&in);
    run.Finish();
    server->Stop();
    run.CheckReopened(server->pool_path());
  }
  return 0;
}
