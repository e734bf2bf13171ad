// A measuring program (prints a figure, asserts nothing): context switches
// per message round trip over the tcp provider on 127.0.0.1, in block
// mode, waiting exactly as rpkv's applications do (docs/tcp_provider.md,
// "Progress"). Counts, not times, so a busy machine still gives the
// figure (a busy machine adds involuntary switches, printed apart).
//
//   rpma_tcp_wakeups [round_trips] [put]     (default 2000)
//
// With `put`, each request is preceded by an unsignaled 64-byte RDMA
// WRITE into the server's memory, as an rpkv put writes its value before
// its COMMIT message.
//
// The server thread waits as a kvserver worker: epoll (level-triggered)
// on its CQ fd set O_NONBLOCK, then rpma_cq_wait, rpma_cq_get_wc until
// RPMA_E_NO_COMPLETION, then one reply per request with rpma_send. The
// client (the main thread) waits as client/src/connection.cc: poll() on
// the CQ fd, rpma_cq_wait, rpma_cq_get_wc; its sends are signaled, and a
// round trip ends when both its send and the reply have completed. The
// two sides use separate peers (separate progress engines), as two hosts.
// Context switches are getrusage(RUSAGE_SELF) over every thread of the
// process (engines included); a voluntary switch is a thread going to
// sleep, i.e. one wake-up later.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "librpma.h"

namespace {

constexpr size_t kMsg = 64;
constexpr char kAddr[] = "127.0.0.1";

int Fail(const char* what, int rc) {
  std::fprintf(stderr, "rpma_tcp_wakeups: %s failed: %d\n", what, rc);
  return 1;
}

bool NextEvent(rpma_conn* conn, rpma_conn_event want) {
  rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  return rpma_conn_next_event(conn, &ev) == 0 && ev == want;
}

struct Switches {
  long voluntary = 0, involuntary = 0;
  static Switches Now() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return {ru.ru_nvcsw, ru.ru_nivcsw};
  }
};

// Voluntary switches of each thread of the process, by tid.
std::map<long, long> PerThread() {
  std::map<long, long> out;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string path = std::string("/proc/self/task/") + e->d_name + "/status";
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      long v = 0;
      if (std::sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) {
        out[std::atol(e->d_name)] = v;
      }
    }
    std::fclose(f);
  }
  closedir(d);
  return out;
}

std::atomic<long> worker_tid{0};

// The kvserver worker's loop for one connection; returns on a STOP byte.
void Serve(rpma_conn* conn, rpma_mr_local* mr, char* buf) {
  worker_tid = syscall(SYS_gettid);
  rpma_cq* cq = nullptr;
  int cq_fd = -1;
  if (rpma_conn_get_cq(conn, &cq) != 0 || rpma_cq_get_fd(cq, &cq_fd) != 0) {
    return;
  }
  fcntl(cq_fd, F_SETFL, fcntl(cq_fd, F_GETFL) | O_NONBLOCK);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, cq_fd, &ev);
  bool stop = false;
  while (!stop) {
    epoll_event out;
    if (epoll_wait(ep, &out, 1, -1) != 1) continue;
    (void)rpma_cq_wait(cq);
    int requests = 0;
    ibv_wc wc;
    while (rpma_cq_get_wc(cq, 1, &wc, nullptr) == 0) {
      if (wc.status != IBV_WC_SUCCESS) return;
      if (wc.opcode != IBV_WC_RECV) continue;
      if (buf[0] == 'S') stop = true;
      requests++;
      (void)rpma_recv(conn, mr, 0, kMsg, nullptr);
    }
    for (int i = 0; i < requests && !stop; i++) {
      (void)rpma_send(conn, mr, kMsg, kMsg, RPMA_F_COMPLETION_ALWAYS, nullptr);
    }
  }
  close(ep);
}

// One round trip as the rpkv client waits in block mode: true when both
// the send and the reply completed.
rpma_mr_remote* put_dst = nullptr;  // set: write before each request

bool RoundTrip(rpma_conn* conn, rpma_cq* cq, int cq_fd, rpma_mr_local* mr) {
  if (rpma_recv(conn, mr, kMsg, kMsg, nullptr) != 0) return false;
  if (put_dst != nullptr &&
      rpma_write(conn, put_dst, 2 * kMsg, mr, 0, kMsg,
                 RPMA_F_COMPLETION_ON_ERROR, nullptr) != 0) {
    return false;
  }
  if (rpma_send(conn, mr, 0, kMsg, RPMA_F_COMPLETION_ALWAYS, nullptr) != 0) {
    return false;
  }
  bool sent = false, replied = false;
  while (!sent || !replied) {
    ibv_wc wc;
    int rc = rpma_cq_get_wc(cq, 1, &wc, nullptr);
    if (rc == 0) {
      if (wc.status != IBV_WC_SUCCESS) return false;
      if (wc.opcode == IBV_WC_SEND) sent = true;
      if (wc.opcode == IBV_WC_RECV) replied = true;
      continue;
    }
    if (rc != RPMA_E_NO_COMPLETION) return false;
    pollfd pfd{cq_fd, POLLIN, 0};
    if (poll(&pfd, 1, 5000) != 1) return false;
    (void)rpma_cq_wait(cq);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000;
  if (n <= 0) return Fail("parsing the round-trip count", -1);
  setenv("RPMA_PROVIDER", "tcp", 0);
  ibv_context* ctx = nullptr;
  int rc = rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx);
  if (rc != 0) return Fail("rpma_utils_get_ibv_context", rc);
  rpma_peer *speer = nullptr, *cpeer = nullptr;
  if ((rc = rpma_peer_new(ctx, &speer)) != 0) return Fail("peer", rc);
  if ((rc = rpma_peer_new(ctx, &cpeer)) != 0) return Fail("peer", rc);
  const bool put = argc > 2 && std::strcmp(argv[2], "put") == 0;
  static char sbuf[3 * kMsg], cbuf[2 * kMsg];
  rpma_mr_local *smr = nullptr, *cmr = nullptr;
  const int usage = RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV;
  if ((rc = rpma_mr_reg(speer, sbuf, sizeof(sbuf),
                        usage | RPMA_MR_USAGE_WRITE_DST, &smr)) != 0 ||
      (rc = rpma_mr_reg(cpeer, cbuf, sizeof(cbuf),
                        usage | RPMA_MR_USAGE_WRITE_SRC, &cmr)) != 0) {
    return Fail("rpma_mr_reg", rc);
  }
  if (put) {
    uint8_t desc[21];
    if ((rc = rpma_mr_get_descriptor(smr, desc)) != 0 ||
        (rc = rpma_mr_remote_from_descriptor(desc, sizeof(desc), &put_dst)) !=
            0) {
      return Fail("remote descriptor", rc);
    }
  }
  const std::string port = std::to_string(31000 + getpid() % 4000);
  rpma_ep* ep = nullptr;
  if ((rc = rpma_ep_listen(speer, kAddr, port.c_str(), &ep)) != 0) {
    return Fail("rpma_ep_listen", rc);
  }
  rpma_conn_req* creq = nullptr;
  rpma_conn* client = nullptr;
  if ((rc = rpma_conn_req_new(cpeer, kAddr, port.c_str(), nullptr, &creq)) !=
          0 ||
      (rc = rpma_conn_req_connect(&creq, nullptr, &client)) != 0) {
    return Fail("client connect", rc);
  }
  rpma_conn_req* sreq = nullptr;
  rpma_conn* server = nullptr;
  if ((rc = rpma_ep_next_conn_req(ep, nullptr, &sreq)) != 0 ||
      (rc = rpma_conn_req_recv(sreq, smr, 0, kMsg, nullptr)) != 0 ||
      (rc = rpma_conn_req_connect(&sreq, nullptr, &server)) != 0) {
    return Fail("server accept", rc);
  }
  if (!NextEvent(client, RPMA_CONN_ESTABLISHED) ||
      !NextEvent(server, RPMA_CONN_ESTABLISHED)) {
    return Fail("establishing", -1);
  }
  std::thread worker([&] { Serve(server, smr, sbuf); });
  rpma_cq* cq = nullptr;
  int cq_fd = -1;
  rpma_conn_get_cq(client, &cq);
  rpma_cq_get_fd(cq, &cq_fd);
  std::memset(cbuf, 'R', kMsg);
  const long warmup = n / 10 + 1;
  for (long i = 0; i < warmup; i++) {
    if (!RoundTrip(client, cq, cq_fd, cmr)) return Fail("warm-up", -1);
  }
  std::map<long, long> threads_before = PerThread();
  Switches before = Switches::Now();
  for (long i = 0; i < n; i++) {
    if (!RoundTrip(client, cq, cq_fd, cmr)) return Fail("round trip", -1);
  }
  Switches after = Switches::Now();
  std::map<long, long> threads_after = PerThread();
  std::memset(cbuf, 'S', kMsg);
  (void)rpma_send(client, cmr, 0, kMsg, RPMA_F_COMPLETION_ON_ERROR, nullptr);
  worker.join();
  const double vol = static_cast<double>(after.voluntary - before.voluntary);
  const double invol =
      static_cast<double>(after.involuntary - before.involuntary);
  std::printf(
      "round trips: %ld%s (block mode, RPMA_TCP_POLL_US=%s)\n"
      "voluntary context switches per round trip: %.2f\n"
      "involuntary context switches per round trip: %.2f\n",
      n, put ? ", each a write + a message" : "",
      std::getenv("RPMA_TCP_POLL_US") ? std::getenv("RPMA_TCP_POLL_US") : "",
      vol / static_cast<double>(n), invol / static_cast<double>(n));
  const long client_tid = syscall(SYS_gettid);
  for (const auto& [tid, v] : threads_after) {
    const char* who = tid == client_tid          ? "client application"
                      : tid == worker_tid.load() ? "server worker"
                                                 : "engine";
    std::printf(
        "  thread %ld (%s): %.2f voluntary per round trip\n", tid, who,
        static_cast<double>(v - threads_before[tid]) / static_cast<double>(n));
  }
  (void)rpma_conn_disconnect(client);
  (void)rpma_conn_delete(&client);
  (void)rpma_conn_disconnect(server);
  (void)rpma_conn_delete(&server);
  (void)rpma_ep_shutdown(&ep);
  if (put_dst != nullptr) (void)rpma_mr_remote_delete(&put_dst);
  (void)rpma_mr_dereg(&smr);
  (void)rpma_mr_dereg(&cmr);
  (void)rpma_peer_delete(&cpeer);
  (void)rpma_peer_delete(&speer);
  return 0;
}
