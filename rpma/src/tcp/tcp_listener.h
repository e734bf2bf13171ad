// Listener of the tcp provider. The listening socket is served by the
// Pd's engine; each accepted socket becomes a TcpConn that must send a
// valid hello within a bounded time, after which a kConnectRequest event
// (owning a new passive CmId) is queued on the listener's channel.
#ifndef RPMA_TCP_TCP_LISTENER_H_
#define RPMA_TCP_TCP_LISTENER_H_

#include <memory>
#include <mutex>

#include "provider/provider.h"
#include "tcp/progress_engine.h"

namespace rpma::prov::tcp {

class CmQueue;
class MrTable;

// The engine-side half (shared with connections still in their
// handshake, which deliver their request through it).
class ListenSocket : public Handler,
                     public std::enable_shared_from_this<ListenSocket> {
 public:
  ListenSocket(int fd, ProgressEngine* engine, MrTable* mrs,
               const DeviceCaps& caps, std::shared_ptr<CmQueue> queue);
  ~ListenSocket() override;
  void OnEvent(uint32_t events) override;
  // Resumes accepting after a pause (see OnEvent).
  void OnTick(int64_t now_ms) override;
  // Queues a connect request; false once the listener is shut down. On
  // success *queue is the channel queue the new id's events go to.
  bool Deliver(CmEvent* ev, std::shared_ptr<CmQueue>* queue);
  int Start();
  void Shutdown();

 private:
  void Pause(int err);

  std::mutex mu_;
  int fd_;
  uint64_t hid_ = 0;
  ProgressEngine* const engine_;
  MrTable* const mrs_;
  const DeviceCaps caps_;  // of accepted connections' targets
  std::shared_ptr<CmQueue> queue_;
  bool alive_ = true;
  // accept() failed for want of descriptors or memory: the listening
  // socket is unwatched until the next tick (level-triggered epoll would
  // spin on the pending connection otherwise).
  bool paused_ = false;
  int64_t last_warning_ms_ = 0;
};

class TcpListener : public Listener {
 public:
  // Binds and listens on addr:port; -EINVAL if unresolvable, -EADDRINUSE,
  // -EADDRNOTAVAIL or another negative errno from bind/listen.
  static int Create(ProgressEngine* engine, MrTable* mrs,
                    const DeviceCaps& caps, const char* addr, const char* port,
                    CmChannel* channel, std::unique_ptr<Listener>* out);
  ~TcpListener() override;

 private:
  explicit TcpListener(std::shared_ptr<ListenSocket> s) : sock_(std::move(s)) {}
  std::shared_ptr<ListenSocket> sock_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_LISTENER_H_
