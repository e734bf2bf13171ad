// What a kv::Client owns: one connection, the engine that drives it and
// the lock that serializes its callers. Private to client/.
#ifndef KV_CLIENT_SRC_CLIENT_STATE_H_
#define KV_CLIENT_SRC_CLIENT_STATE_H_

#include <memory>
#include <mutex>

#include "connection.h"
#include "engine.h"
#include "server_clock.h"

namespace kv {

class ClientState {
 public:
  ClientState(std::unique_ptr<Connection> c, const ClientOptions& o)
      : conn(std::move(c)), engine(conn.get(), o) {}
  std::mutex mu;
  // Declared before the engine, which points at it (destroyed after).
  std::unique_ptr<Connection> conn;
  Engine engine;
  ServerClock clock;  // under mu

  // Whether a read version expiring at expiry_ms (0: never) is visible
  // now; *ttl_ms: the time left, -1 without an expiry. Pings the server
  // first when the clock estimate needs a sample (server_clock.h). Caller
  // holds mu and no read of its own is in flight. Errors: those of the
  // ping (the connection's), unavailable when the reply carries no clock.
  Status Judge(uint64_t expiry_ms, bool* visible, int64_t* ttl_ms);
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_CLIENT_STATE_H_
