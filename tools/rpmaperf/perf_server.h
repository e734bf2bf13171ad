// rpmaperf server: exposes one registered region to one client at a time
// and echoes messages for --op=send.
#ifndef RPKV_TOOLS_RPMAPERF_PERF_SERVER_H_
#define RPKV_TOOLS_RPMAPERF_PERF_SERVER_H_

#include <cstdint>
#include <string>

namespace rpmaperf {

struct ServerOptions {
  std::string addr = "127.0.0.1";
  std::string port = "7471";
  uint64_t region_size = 64ull << 20;
  std::string pmem_file;  // optional: back the region by this file
  bool busy_poll = false;
  int max_clients = 0;  // 0 = serve forever
};

int RunServer(const ServerOptions& options);

}  // namespace rpmaperf

#endif  // RPKV_TOOLS_RPMAPERF_PERF_SERVER_H_
