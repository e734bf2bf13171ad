// Backend: one connection of a store under test, as kvbench drives it.
// Two implementations — rpkv through kv::Client (rpkv_backend.cc) and
// Redis through hiredis (redis_backend.cc) — with one contract, so that
// both run exactly the same operations:
//
//   Execute(requests) runs all of them with requests.size() in flight
//   (kv::Batch on rpkv, a pipeline on Redis; one plain call when there is
//   one) and returns when every reply is in. It returns the connection's
//   error when the connection failed (then replies say kError); otherwise
//   ok, with each request's outcome in its reply.
//
// Thread-safety: a Backend is used by one thread; a BackendFactory's
// Connect may be called from any thread.
#ifndef RPKV_TOOLS_KVBENCH_BACKEND_H_
#define RPKV_TOOLS_KVBENCH_BACKEND_H_

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kv/status.h"

namespace kvbench {

struct Request {
  enum class Kind : uint8_t { kGet, kPut, kDelete };
  Kind kind = Kind::kGet;
  std::string key;
  std::string value;  // kPut
};

struct Reply {
  enum class Outcome : uint8_t { kOk, kNotFound, kError };
  Outcome outcome = Outcome::kError;
  std::string value;  // kGet with kOk
  std::string error;  // kError: what the backend said
};

class Backend {
 public:
  virtual ~Backend() = default;
  // See the file comment. `replies` is resized to requests.size().
  virtual kv::Status Execute(std::span<const Request> requests,
                             std::vector<Reply>* replies) = 0;
  // One round trip through the server that touches no data (rpkv INFO
  // ping, Redis PING): the floor under every operation's latency.
  // Errors: the connection's.
  virtual kv::Status Ping() = 0;
};

// Name/value pairs describing the server (version, provider, pool
// granularity, persistence settings) for the JSON "config".
using Facts = std::vector<std::pair<std::string, std::string>>;

class BackendFactory {
 public:
  virtual ~BackendFactory() = default;
  // "rpkv" or "redis".
  virtual std::string name() const = 0;
  // A new connection. Errors: those of the backend's connect, with its
  // message (unavailable when nothing listens, ...).
  virtual kv::Result<std::unique_ptr<Backend>> Connect() = 0;
  // What the server says about itself; errors as Connect.
  virtual kv::Result<Facts> Describe() = 0;
};

struct RpkvTarget {
  std::string server;  // HOST:PORT
  // A cluster instead (etcd://HOST:PORT[,...]): server is then ignored.
  std::string cluster;
  std::string cluster_name = "rpkv";
  std::string keyspace;
  std::string access_key;
  bool create = false;
  // --wait: "poll" (spin on the completion queue), "block" (sleep on its
  // channel), "adaptive" (spin spin_us, then block; the client's default).
  std::string wait = "adaptive";
  uint32_t spin_us = 50;
  uint32_t qd = 1;
};
std::unique_ptr<BackendFactory> MakeRpkvFactory(const RpkvTarget& target);

struct RedisTarget {
  std::string server;  // HOST:PORT
};
std::unique_ptr<BackendFactory> MakeRedisFactory(const RedisTarget& target);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_BACKEND_H_
