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
// Lending (Lend/Reclaim, rpma_conn_group_set_busy): a thread that drives
// the group and is about to be busy elsewhere for a while (kvserver's
// worker in a commit point's msync) lends the group's sockets to the
// engine thread, which then serves them at once (one-sided requests, and
// messages whose completions wait queued) instead of after the handover's
// 2 x kHandoverMs. The sockets are mirrored into a second epoll set, which
// holds no event fd (a pending completion would keep it readable), armed
// in the engine with EPOLLONESHOT while lent: Lend and Reclaim are one
// epoll_ctl each.
//
// Thread-safety: every method may be called from any thread. Join, Modify
// and Leave are called with the connection's mutex held; the group's own
// mutex is a leaf (Progress() calls connections without it).
#ifndef RPMA_TCP_PROGRESS_GROUP_H_
#define RPMA_TCP_PROGRESS_GROUP_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rpma::prov::tcp {

class TcpConn;
class ProgressEngine;

class ProgressGroup : public std::enable_shared_from_this<ProgressGroup> {
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

  // Lending to `engine` (which must outlive the group's registration:
  // StopLending() ends it). Lend(nullptr) does nothing.
  void Lend(ProgressEngine* engine);
  void Reclaim();
  // Unregisters from the engine (before the engine's Pd may go).
  void StopLending();
  // Socket events served by Progress() (the first delegates the
  // connection: the engine stops watching it) and by the engine while
  // lent. For tests.
  uint64_t app_serves() const {
    return app_serves_.load(std::memory_order_relaxed);
  }
  uint64_t lent_serves() const {
    return lent_serves_.load(std::memory_order_relaxed);
  }

 private:
  class LendHandler;
  ProgressGroup(int epfd, int lend_epfd) : epfd_(epfd), lend_epfd_(lend_epfd) {}
  // On the engine thread: the ready members' I/O, then re-arms if lent.
  void ServeLent();
  std::shared_ptr<TcpConn> Member(uint64_t key);

  const int epfd_;
  const int lend_epfd_;  // the members' sockets only
  std::mutex mu_;
  std::unordered_map<uint64_t, std::weak_ptr<TcpConn>> members_;
  uint64_t next_key_ = 1;  // 0: the channel's event fd
  // Lending: the engine the lend set is registered with, and its id.
  std::mutex lend_mu_;
  ProgressEngine* engine_ = nullptr;  // guarded by lend_mu_
  uint64_t lend_id_ = 0;              // guarded by lend_mu_
  std::atomic<bool> lent_{false};
  std::atomic<uint64_t> app_serves_{0};
  std::atomic<uint64_t> lent_serves_{0};
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_PROGRESS_GROUP_H_
