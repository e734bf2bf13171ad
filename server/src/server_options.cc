#include "kv/server/server_options.h"

namespace kv::server {

constexpr uint64_t kMinPoolSize = 16ull << 20;

Result<ServerOptions> MakeServerOptions(const std::string& pool_path,
                                        uint64_t pool_size,
                                        const std::string& listen) {
  if (pool_path.empty()) {
    return Status::InvalidArgument(
        "--pool is required (path of the pool file)");
  }
  if (pool_size < kMinPoolSize) {
    return Status::InvalidArgument("--pool_size must be at least 16 MiB");
  }
  Result<Endpoint> ep = Endpoint::Parse(listen);
  if (!ep.ok()) return ep.status();
  ServerOptions o;
  o.pool_path = pool_path;
  o.pool_size = pool_size;
  o.listen = std::move(ep).value();
  return o;
}

}  // namespace kv::server
