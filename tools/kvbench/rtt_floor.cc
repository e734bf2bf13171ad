// kvbench_rtt_floor — what one message round trip over loopback TCP costs
// on this machine: the floor under every qd-1 latency of kvbench, rpkv's
// and Redis's alike (a get is at least one round trip either way).
//
//   kvbench_rtt_floor [--count=20000] [--size=64]
//
// Two threads of one process ping-pong --size bytes over a TCP connection
// on 127.0.0.1 (TCP_NODELAY), --count times each way:
//  - block: both sides sleep in recv (what a blocking client and a server
//    in epoll pay: two thread wake-ups per round trip);
//  - busy-poll: both sides spin on non-blocking recv (no wake-up: the
//    kernel's loopback path alone; needs two idle cores).
// Prints p50 and p99 of each. Exit status: 0 ok, 2 usage, 3 socket error.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gflags/gflags.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "kv/tools/flags.h"

DEFINE_uint32(count, 20000, "round trips per mode");
DEFINE_uint32(size, 64, "bytes per message (1..4096)");

namespace {

using Clock = std::chrono::steady_clock;

// Receives exactly n bytes; spins on EAGAIN when the socket is
// non-blocking. False on error or end of stream.
bool RecvAll(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      return false;
    }
  }
  return true;
}

bool SendAll(int fd, const char* buf, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    const ssize_t r = send(fd, buf + sent, n - sent, MSG_NOSIGNAL);
    if (r > 0) {
      sent += static_cast<size_t>(r);
    } else if (r < 0 && errno != EAGAIN && errno != EINTR) {
      return false;
    }
  }
  return true;
}

// A connected pair on 127.0.0.1 (port chosen by the kernel). False on a
// socket error.
bool Pair(int* a, int* b) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bool ok = l >= 0 && bind(l, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
            listen(l, 1) == 0 &&
            getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  *a = ok ? socket(AF_INET, SOCK_STREAM, 0) : -1;
  ok = ok && *a >= 0 &&
       connect(*a, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  *b = ok ? accept(l, nullptr, nullptr) : -1;
  if (l >= 0) close(l);
  if (!ok || *b < 0) return false;
  const int one = 1;
  setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

// One mode: the round trips' latencies in µs, sorted; empty on error.
std::vector<double> Run(bool busy_poll) {
  int a = -1, b = -1;
  std::vector<double> lat;
  if (!Pair(&a, &b)) return lat;
  if (busy_poll) {
    fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
    fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
  }
  const size_t n = FLAGS_size;
  std::thread echo([b, n] {
    std::vector<char> buf(n);
    while (RecvAll(b, buf.data(), n) && SendAll(b, buf.data(), n)) {
    }
  });
  std::vector<char> buf(n, 'x');
  lat.reserve(FLAGS_count);
  for (uint32_t i = 0; i < FLAGS_count; i++) {
    const auto t0 = Clock::now();
    if (!SendAll(a, buf.data(), n) || !RecvAll(a, buf.data(), n)) {
      lat.clear();
      break;
    }
    lat.push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  shutdown(a, SHUT_RDWR);
  echo.join();
  close(a);
  close(b);
  std::sort(lat.begin(), lat.end());
  return lat;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = kv::tools::ParseFlags(
          &argc, &argv,
          {.name = "kvbench_rtt_floor",
           .usage = "kvbench_rtt_floor [--count=N] [--size=BYTES]\n"
                    "One loopback TCP round trip, blocking and busy-polled "
                    "(tools/kvbench/README.md).\nExit status: 0 ok, 2 "
                    "usage, 3 socket error.",
           .footer = ""})) {
    return *rc;
  }
  if (argc > 1 || FLAGS_count == 0 || FLAGS_size == 0 || FLAGS_size > 4096) {
    std::fprintf(stderr,
                 "kvbench_rtt_floor: bad arguments (see --help): --count > "
                 "0, --size 1..4096\n");
    return 2;
  }
  for (bool busy : {false, true}) {
    const std::vector<double> lat = Run(busy);
    if (lat.empty()) {
      std::fprintf(stderr, "kvbench_rtt_floor: loopback socket: %s\n",
                   std::strerror(errno));
      return 3;
    }
    std::printf("%s: %u round trips of %u B: p50 %.1f us, p99 %.1f us\n",
                busy ? "busy-poll" : "block", FLAGS_count, FLAGS_size,
                lat[lat.size() / 2], lat[lat.size() * 99 / 100]);
  }
  return 0;
}
