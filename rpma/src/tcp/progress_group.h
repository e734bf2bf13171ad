// The sockets whose progress a completion channel's waiters make
// themselves (docs/tcp_provider.md, "Progress").
//
// A completion channel's fd is this group's epoll fd: it nests the
// channel's event fd and the socket of every connection whose QP reports
// to a CQ of the channel, with the interest the connection has in its
// socket. So the fd becomes readable when a completion is pending *or*
// when one of those sockets has something to read (or room to write what
// is queued), and the thread that waits on it, woken by the peer's bytes
// directly, reads them itself (Progress(): rpma_cq_wait, rpma_cq_get_wc)
// instead of waiting for the engine thread to read them and wake it.
//
// Thread-safety: every method may be called from any thread. Join, Modify
// and Leave are called with the connection's mutex held; the group's own
// mutex is a leaf (Progress() calls connections without it).
#ifndef RPMA_TCP_PROGRESS_GROUP_H_
#define RPMA_TCP_PROGRESS_GROUP_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rpma::prov::tcp {

class TcpConn;

class ProgressGroup {
 public:
  // An epoll fd nesting event_fd; -errno of epoll_create1 / epoll_ctl.
  static int Create(int event_fd, std::shared_ptr<ProgressGroup>* out);
  ~ProgressGroup();
  ProgressGroup(const ProgressGroup&) = delete;
  ProgressGroup& operator=(const ProgressGroup&) = delete;

  int fd() const { return epfd_; }

  // Adds sock (epoll `events`) on behalf of conn; *key names the entry.
  // Returns 0 or -errno (the connection then stays the engine's alone).
  int Join(const std::shared_ptr<TcpConn>& conn, int sock, uint32_t events,
           uint64_t* key);
  void Modify(int sock, uint64_t key, uint32_t events);
  // Before sock is closed.
  void Leave(int sock, uint64_t key);

  // Runs the I/O of every member whose socket is ready, on the calling
  // thread (TcpConn::OnAppEvent), without blocking.
  void Progress();

 private:
  explicit ProgressGroup(int epfd) : epfd_(epfd) {}

  const int epfd_;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::weak_ptr<TcpConn>> members_;
  uint64_t next_key_ = 1;  // 0: the channel's event fd
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_PROGRESS_GROUP_H_
