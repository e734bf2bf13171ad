// What a kv::Client owns: one connection, the engine that drives it and
// the lock that serializes its callers. Private to client/.
#ifndef KV_CLIENT_SRC_CLIENT_STATE_H_
#define KV_CLIENT_SRC_CLIENT_STATE_H_

#include <memory>
#include <mutex>

#include "connection.h"
#include "engine.h"

namespace kv {

class ClientState {
 public:
  ClientState(std::unique_ptr<Connection> c, const ClientOptions& o)
      : conn(std::move(c)), engine(conn.get(), o) {}
  std::mutex mu;
  // Declared before the engine, which points at it (destroyed after).
  std::unique_ptr<Connection> conn;
  Engine engine;
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_CLIENT_STATE_H_
