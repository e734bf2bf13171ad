// The eventfd operations behind EventQueue; see event_queue.h.
#include "tcp/event_queue.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace rpma::prov::tcp::event_fd {

int Create() {
  int fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  return fd >= 0 ? fd : -errno;
}

void Add(int fd, size_t n) {
  if (n == 0) return;
  // Cannot block or fail: the counter stays far below its 2^64-2 limit
  // (it counts queued events, plus 2^32 once closed).
  uint64_t v = n;
  (void)!write(fd, &v, sizeof(v));
}

int Take(int fd, size_t n) {
  // Semaphore mode: each read takes exactly one. The caller holds the
  // queue's mutex and knows the counter is at least n, so none blocks
  // (and O_NONBLOCK set by the application changes nothing).
  for (size_t i = 0; i < n; ++i) {
    uint64_t v;
    if (read(fd, &v, sizeof(v)) != sizeof(v)) return -EIO;
  }
  return 0;
}

void Raise(int fd) { Add(fd, size_t{1} << 32); }

bool NonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) != 0;
}

int WaitReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, -1) < 0 && errno != EINTR) return -errno;
  return 0;
}

void Destroy(int fd) {
  if (fd >= 0) close(fd);
}

}  // namespace rpma::prov::tcp::event_fd
