// TcpProxy: a TCP proxy to one port on 127.0.0.1 that a test can cut, to
// partition a process without network namespaces (the machines that run
// the tests have neither netem nor iptables; the partition tests of
// docs/replication.md use it).
//
// Thread-safety: Cut/Restore/port from any thread; the proxy runs its own
// thread until destroyed.
#ifndef KV_TESTS_E2E_TCP_PROXY_H_
#define KV_TESTS_E2E_TCP_PROXY_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace kv::e2e {

// A TCP proxy to one port on 127.0.0.1 that the test can cut: from Cut()
// on, no byte passes either way and new connections are accepted and left
// silent, as if the packets were dropped. In front of etcd for one node
// (--cluster at the proxy): that node is partitioned from etcd while it
// still reaches clients and the other nodes. In front of a node's own
// port (--advertise at the proxy): everyone is partitioned from it while
// it still reaches etcd.
class TcpProxy {
 public:
  bool Start(int target_port) {
    target_ = target_port;
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_, 64) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return false;
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
    return true;
  }
  ~TcpProxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    if (listen_ >= 0) ::close(listen_);
  }
  int port() const { return port_; }
  void Cut() { cut_ = true; }
  void Restore() { cut_ = false; }

 private:
  void Run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listen_, POLLIN, 0}};
      const size_t polled = pairs_.size();
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = ::accept(listen_, nullptr, nullptr);
        int u = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in t{};
        t.sin_family = AF_INET;
        t.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        t.sin_port = htons(static_cast<uint16_t>(target_));
        if (c >= 0 &&
            ::connect(u, reinterpret_cast<sockaddr*>(&t), sizeof t) == 0) {
          pairs_.emplace_back(c, u);
        } else {
          if (c >= 0) ::close(c);
          ::close(u);
        }
      }
      if (cut_) continue;  // partitioned: nothing passes (buffers fill)
      char buf[16384];
      std::vector<size_t> closed;
      for (size_t i = 0; i < polled; i++) {
        auto [a, b] = pairs_[i];
        for (int dir = 0; dir < 2; dir++) {
          const pollfd& f = fds[1 + 2 * i + dir];
          if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
          ssize_t n = ::read(from, buf, sizeof buf);
          if (n > 0) {
            (void)!::write(to, buf, static_cast<size_t>(n));
          } else {
            closed.push_back(i);
            break;
          }
        }
      }
      for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
        ::close(pairs_[*it].first);
        ::close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + static_cast<long>(*it));
      }
    }
  }
  int listen_ = -1;
  int port_ = 0;
  int target_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cut_{false};
  std::thread thread_;
  std::vector<std::pair<int, int>> pairs_;  // thread only
};

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_TCP_PROXY_H_
