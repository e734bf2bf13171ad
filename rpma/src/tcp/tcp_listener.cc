// Listener of the tcp provider; see tcp_listener.h.
#include "tcp/tcp_listener.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "log_internal.h"
#include "tcp/socket_util.h"
#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_conn.h"

namespace rpma::prov::tcp {

ListenSocket::ListenSocket(int fd, ProgressEngine* engine, MrTable* mrs,
                           const DeviceCaps& caps,
                           std::shared_ptr<CmQueue> queue)
    : fd_(fd),
      engine_(engine),
      mrs_(mrs),
      caps_(caps),
      queue_(std::move(queue)) {}

ListenSocket::~ListenSocket() {
  if (fd_ >= 0) close(fd_);
}

int ListenSocket::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  // No ticks while accepting: an idle listener costs no wake-up.
  return engine_->Add(fd_, EPOLLIN, shared_from_this(), &hid_,
                      /*ticks=*/false);
}

void ListenSocket::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  alive_ = false;
  queue_.reset();
  if (fd_ >= 0) {
    engine_->Remove(fd_, hid_);
    close(fd_);
    fd_ = -1;
  }
  if (paused_) {
    paused_ = false;
    engine_->HoldTicks(-1);
  }
}

bool ListenSocket::Deliver(CmEvent* ev, std::shared_ptr<CmQueue>* queue) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!alive_ || queue_ == nullptr) return false;
  if (!queue_->Push(ev)) return false;
  *queue = queue_;
  return true;
}

void ListenSocket::OnEvent(uint32_t events) {
  for (int i = 0; i < 64; ++i) {
    int fd;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fd_ < 0) return;
      fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    }
    if (fd < 0) {
      int err = errno;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        Pause(err);
        return;
      }
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR &&
          err != ECONNABORTED) {
        RPMA_LOG_ERROR("tcp: accept failed: %s", std::strerror(err));
      }
      return;
    }
    // The connection holds the listener only until its hello arrives.
    auto conn = std::make_shared<TcpConn>(engine_, mrs_, caps_);
    if (conn->Adopt(fd, shared_from_this()) != 0) {
      RPMA_LOG_ERROR("tcp: cannot serve an accepted connection");
    }
  }
}

void ListenSocket::Pause(int err) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0 || paused_) return;
  paused_ = true;
  engine_->Modify(fd_, hid_, 0);
  engine_->HoldTicks(1);  // the retry runs on the tick
  int64_t now = NowMs();
  if (now - last_warning_ms_ >= 10000) {  // at most one line per 10 s
    last_warning_ms_ = now;
    RPMA_LOG_WARNING(
        "tcp: accept failed: %s; pending connections wait (retried every "
        "%d ms); raise the open-file limit (ulimit -n) if this persists",
        std::strerror(err), ProgressEngine::kTickMs);
  }
}

void ListenSocket::OnTick(int64_t /*now_ms*/) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0 || !paused_) return;
  paused_ = false;
  engine_->HoldTicks(-1);
  engine_->Modify(fd_, hid_, EPOLLIN);
}

int TcpListener::Create(ProgressEngine* engine, MrTable* mrs,
                        const DeviceCaps& caps, const char* addr,
                        const char* port, CmChannel* channel,
                        std::unique_ptr<Listener>* out) {
  auto* ch = dynamic_cast<TcpCmChannel*>(channel);
  if (ch == nullptr || port == nullptr) return -EINVAL;
  SockAddr sa;
  int rc = Resolve(addr, port, true, &sa);
  if (rc != 0) return rc;
  int fd =
      socket(sa.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa.ss), sa.len) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    rc = -errno;
    close(fd);
    return rc;
  }
  auto sock =
      std::make_shared<ListenSocket>(fd, engine, mrs, caps, ch->queue());
  rc = sock->Start();
  if (rc != 0) return rc;  // ~ListenSocket closes fd
  out->reset(new TcpListener(std::move(sock)));
  return 0;
}

TcpListener::~TcpListener() { sock_->Shutdown(); }

}  // namespace rpma::prov::tcp
