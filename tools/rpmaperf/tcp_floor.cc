// tcp_floor: the loopback TCP ping-pong floor rpmaperf is compared with.
// Two threads of one process exchange a fixed-size message over a TCP
// connection on 127.0.0.1 (TCP_NODELAY); both busy-poll non-blocking
// sockets (recv with MSG_DONTWAIT in a loop), so no round trip pays a
// thread wake-up. The p50 round trip is what a software NIC over TCP can
// at best approach for a 64 B read at queue depth 1 (request out, data
// back); --block=true measures the same exchange with blocking sockets.
//
//   tcp_floor [--size=64] [--seconds=3] [--block=false] [--json]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "latency_stats.h"
#include "perf_common.h"

namespace {

struct Options {
  size_t size = 64;
  double seconds = 3;
  bool block = false;
  bool json = false;
};

bool ParseFlag(const char* arg, Options* o) {
  std::string a(arg);
  auto value = [&](const char* name, std::string* v) {
    std::string p = std::string("--") + name + "=";
    if (a.rfind(p, 0) != 0) return false;
    *v = a.substr(p.size());
    return true;
  };
  std::string v;
  if (a == "--json") return o->json = true;
  if (a == "--block") return o->block = true;
  if (value("size", &v)) {
    o->size = std::strtoul(v.c_str(), nullptr, 10);
    return o->size > 0 && o->size <= (1u << 20);
  }
  if (value("seconds", &v)) {
    o->seconds = std::strtod(v.c_str(), nullptr);
    return o->seconds > 0;
  }
  if (value("block", &v)) {
    o->block = v == "true" || v == "1";
    return v == "true" || v == "false" || v == "1" || v == "0";
  }
  if (value("json", &v)) {
    o->json = v == "true" || v == "1";
    return true;
  }
  return false;
}

// Moves exactly len bytes; false when the peer closed or on an error.
bool Xfer(int fd, uint8_t* buf, size_t len, bool send_side, bool block) {
  size_t done = 0;
  int flags = block ? 0 : MSG_DONTWAIT;
  while (done < len) {
    ssize_t n = send_side
                    ? send(fd, buf + done, len - done, flags | MSG_NOSIGNAL)
                    : recv(fd, buf + done, len - done, flags);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      return false;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
  }
  return true;
}

void Tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!ParseFlag(argv[i], &o)) {
      std::fprintf(stderr,
                   "usage: tcp_floor [--size=N] [--seconds=S] "
                   "[--block=true|false] [--json]\n");
      return 2;
    }
  }
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof(a);
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(lfd, 1) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) != 0) {
    std::perror("tcp_floor: listen");
    return 1;
  }
  int cfd = socket(AF_INET, SOCK_STREAM, 0);
  if (cfd < 0 || connect(cfd, reinterpret_cast<sockaddr*>(&a), alen) != 0) {
    std::perror("tcp_floor: connect");
    return 1;
  }
  int sfd = accept(lfd, nullptr, nullptr);
  if (sfd < 0) {
    std::perror("tcp_floor: accept");
    return 1;
  }
  close(lfd);
  Tune(cfd);
  Tune(sfd);

  // The echo side: answers every message with one of the same size.
  std::thread echo([&] {
    std::vector<uint8_t> buf(o.size);
    while (Xfer(sfd, buf.data(), o.size, false, o.block) &&
           Xfer(sfd, buf.data(), o.size, true, o.block)) {
    }
    close(sfd);
  });

  std::vector<uint8_t> buf(o.size, 0x5a);
  rpmaperf::LatencyStats stats;
  const uint64_t warm_end = rpmaperf::NowNanos() + 200'000'000ull;
  uint64_t start = 0, end = 0;
  for (;;) {
    uint64_t t0 = rpmaperf::NowNanos();
    if (!Xfer(cfd, buf.data(), o.size, true, o.block) ||
        !Xfer(cfd, buf.data(), o.size, false, o.block)) {
      std::fprintf(stderr, "tcp_floor: the echo side failed\n");
      return 1;
    }
    uint64_t t1 = rpmaperf::NowNanos();
    if (t1 < warm_end) continue;
    if (start == 0) {
      start = t0;
      end = start + static_cast<uint64_t>(o.seconds * 1e9);
    }
    stats.Add(t1 - t0);
    if (t1 >= end) break;
  }
  shutdown(cfd, SHUT_WR);
  echo.join();
  close(cfd);
  rpmaperf::Summary s = stats.Summarize((end - start) / 1e9, o.size);
  if (o.json) {
    std::printf(
        "{\"size\":%zu,\"block\":%s,\"ops\":%llu,\"ops_per_sec\":%.0f,"
        "\"p50_us\":%.2f,\"p99_us\":%.2f}\n",
        o.size, o.block ? "true" : "false",
        static_cast<unsigned long long>(s.ops), s.ops_per_sec, s.p50_us,
        s.p99_us);
  } else {
    std::printf("tcp ping-pong %zu B (%s): p50 %.2f us, p99 %.2f us, %.0f /s\n",
                o.size, o.block ? "blocking" : "busy-poll", s.p50_us, s.p99_us,
                s.ops_per_sec);
  }
  return 0;
}
