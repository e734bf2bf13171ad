// Socket helpers of the tcp provider: resolution, options, clocks.
#ifndef RPMA_TCP_SOCKET_UTIL_H_
#define RPMA_TCP_SOCKET_UTIL_H_

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace rpma::prov::tcp {

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

// Resolves addr:port (port may be null = 0) to the first IPv4/IPv6 address.
// Returns 0 or -EINVAL when it does not resolve.
int Resolve(const char* addr, const char* port, bool passive, SockAddr* out);

// Numeric "host" of a resolved address (for device naming and logs).
std::string NumericHost(const SockAddr& a);

// The peer of a connected socket as "host:port" (logs).
std::string PeerName(int fd);

// Latency and liveness options of every data socket: TCP_NODELAY, and
// keepalive/user timeout so a dead peer is noticed within a few seconds.
void TuneSocket(int fd);

// Monotonic milliseconds.
int64_t NowMs();

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_SOCKET_UTIL_H_
