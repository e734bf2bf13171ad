// kv::server::ServerOptions: what kvserver is told on its command line,
// validated before anything is opened. Thread-safety: a plain value.
#ifndef KV_SERVER_SERVER_OPTIONS_H_
#define KV_SERVER_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "kv/endpoint.h"
#include "kv/status.h"

namespace kv::server {

struct ServerOptions {
  std::string pool_path;
  uint64_t pool_size = 1ull << 30;  // used only when the pool is created
  Endpoint listen{"127.0.0.1", "7400"};
};

// Builds options from raw flag values.
// Errors: invalid_argument for an empty pool path, a pool size below
// 16 MiB, or a malformed listen address.
Result<ServerOptions> MakeServerOptions(const std::string& pool_path,
                                        uint64_t pool_size,
                                        const std::string& listen);

}  // namespace kv::server

#endif  // KV_SERVER_SERVER_OPTIONS_H_
