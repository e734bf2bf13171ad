// Socket helpers; see socket_util.h.
#include "tcp/socket_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace rpma::prov::tcp {

int Resolve(const char* addr, const char* port, bool passive, SockAddr* out) {
  if (addr == nullptr) return -EINVAL;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  if (getaddrinfo(addr, port, &hints, &res) != 0 || res == nullptr) {
    return -EINVAL;
  }
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    if (ai->ai_addrlen > sizeof(out->ss)) continue;
    std::memcpy(&out->ss, ai->ai_addr, ai->ai_addrlen);
    out->len = ai->ai_addrlen;
    freeaddrinfo(res);
    return 0;
  }
  freeaddrinfo(res);
  return -EINVAL;
}

namespace {

std::string Format(const sockaddr* sa, bool with_port) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  }
  std::string s(host);
  if (with_port) s += ":" + std::to_string(port);
  return s;
}

}  // namespace

std::string NumericHost(const SockAddr& a) {
  return Format(reinterpret_cast<const sockaddr*>(&a.ss), false);
}

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "?";
  }
  return Format(reinterpret_cast<const sockaddr*>(&ss), true);
}

void TuneSocket(int fd) {
  // Failures only cost latency or liveness detection, never correctness.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle = 2, intvl = 1, cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  unsigned user_timeout_ms = 5000;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
             sizeof(user_timeout_ms));
}

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace rpma::prov::tcp
