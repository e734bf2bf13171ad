// The server's clock: what a keyspace stamps expiries with (SealRecord),
// judges them by (Get, the cleaner) and what kvserver publishes to clients
// (the INFO ping reply, docs/protocol.md "Server clock"). Unix
// milliseconds of CLOCK_REALTIME. Header-only; thread-safe.
#ifndef KV_SERVER_CLOCK_H_
#define KV_SERVER_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace kv {

inline uint64_t UnixMillisNow() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
}

}  // namespace kv

#endif  // KV_SERVER_CLOCK_H_
