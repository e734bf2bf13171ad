// rpmaperf: raw RPMA latency and bandwidth over the librpma API.
//
//   rpmaperf --mode=server [--addr=127.0.0.1] [--port=7471]
//   rpmaperf --mode=client --op=read --size=64 --qd=1 --seconds=5 [--json]

#include <gflags/gflags.h>

#include <cstdio>
#include <string>

#include "kv/tools/flags.h"
#include "perf_client.h"
#include "perf_server.h"

DEFINE_string(mode, "", "server | client (required)");
DEFINE_string(addr, "127.0.0.1", "address to listen on / connect to");
DEFINE_string(port, "7471", "TCP port (the tcp provider) / RDMA CM port");
DEFINE_string(op, "read",
              "client: read | write | flush (write + persistent flush) | "
              "send (ping-pong through the server) | atomic (8-byte)");
DEFINE_uint32(size, 64, "client: bytes per operation (1 .. 64 MiB)");
DEFINE_uint32(qd, 1, "client: operations kept in flight (1 .. 1024)");
DEFINE_double(seconds, 5, "client: measured seconds");
DEFINE_double(warmup_seconds, 1, "client: unmeasured seconds first");
DEFINE_bool(busy_poll, true,
            "poll the completion queue (yielding between empty polls) instead "
            "of sleeping on its fd");
DEFINE_bool(json, false, "client: print one JSON object instead of text");
DEFINE_uint64(region_size, 64ull << 20, "server: bytes of the shared region");
DEFINE_string(pmem_file, "",
              "server: back the region with this file (persistent flush "
              "then msyncs it); default anonymous memory");
DEFINE_int32(max_clients, 0,
             "server: exit after this many clients (0 = "
             "serve forever)");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "rpmaperf: %s (see --help)\n", message.c_str());
  return 2;
}

int Client() {
  rpmaperf::ClientOptions o;
  o.addr = FLAGS_addr;
  o.port = FLAGS_port;
  if (!rpmaperf::ParseOp(FLAGS_op, &o.op)) {
    return Fail("unknown --op '" + FLAGS_op + "'");
  }
  if (FLAGS_size == 0 || FLAGS_size > rpmaperf::kMaxSize) {
    return Fail("--size must be 1 .. 67108864");
  }
  if (FLAGS_qd == 0 || FLAGS_qd > rpmaperf::kMaxQd) {
    return Fail("--qd must be 1 .. 1024");
  }
  if (!(FLAGS_seconds > 0) || FLAGS_warmup_seconds < 0) {
    return Fail("--seconds must be > 0 and --warmup_seconds >= 0");
  }
  o.size = FLAGS_size;
  o.qd = FLAGS_qd;
  o.seconds = FLAGS_seconds;
  o.warmup_seconds = FLAGS_warmup_seconds;
  o.busy_poll = FLAGS_busy_poll;
  rpmaperf::Summary s;
  int rc = rpmaperf::RunClient(o, &s);
  if (rc != 0) return 1;
  const unsigned bytes = o.op == rpmaperf::Op::kAtomic ? 8 : o.size;
  if (FLAGS_json) {
    std::printf(
        "{\"op\":\"%s\",\"size\":%u,\"qd\":%u,\"seconds\":%.3f,"
        "\"ops\":%llu,\"ops_per_sec\":%.1f,\"mb_per_sec\":%.2f,"
        "\"p50_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f}\n",
        rpmaperf::OpName(o.op), bytes, o.qd, s.seconds,
        static_cast<unsigned long long>(s.ops), s.ops_per_sec, s.mb_per_sec,
        s.p50_us, s.p99_us, s.max_us);
  } else {
    std::printf(
        "op=%s size=%u qd=%u  ops/s=%.0f  MB/s=%.1f  p50=%.2f us  "
        "p99=%.2f us  (ops=%llu in %.1f s)\n",
        rpmaperf::OpName(o.op), bytes, o.qd, s.ops_per_sec, s.mb_per_sec,
        s.p50_us, s.p99_us, static_cast<unsigned long long>(s.ops), s.seconds);
  }
  return 0;
}

int Server() {
  rpmaperf::ServerOptions o;
  o.addr = FLAGS_addr;
  o.port = FLAGS_port;
  if (FLAGS_region_size < (1u << 20)) {
    return Fail("--region_size must be at least 1 MiB");
  }
  o.region_size = FLAGS_region_size;
  o.pmem_file = FLAGS_pmem_file;
  o.busy_poll = FLAGS_busy_poll;
  o.max_clients = FLAGS_max_clients;
  return rpmaperf::RunServer(o) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = kv::tools::ParseFlags(
          &argc, &argv,
          {.name = "rpmaperf",
           .usage = "rpmaperf — raw RPMA latency/bandwidth\n\nusage:\n"
                    "  rpmaperf --mode=server [--addr=A] [--port=P] "
                    "[--pmem_file=F]\n"
                    "  rpmaperf --mode=client "
                    "--op=read|write|flush|send|atomic [--size=N] [--qd=N] "
                    "[--seconds=S] [--json]\n"})) {
    return *rc;
  }
  if (argc > 1)
    return Fail(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_mode == "server") return Server();
  if (FLAGS_mode == "client") return Client();
  return Fail("--mode must be server or client");
}
