// The progress engine of a tcp Pd: one thread with an epoll set serving
// every listener and connection socket of the Pd. It acts as the NIC:
// it executes the peer's one-sided operations on registered memory
// without any call from the application.
//
// Polling: the thread spins (non-blocking epoll_wait, yielding the CPU
// between empty polls) while there is traffic, and blocks in epoll_wait
// once no socket event arrived for the poll window: a busy connection
// pays no thread wake-up per message, an idle engine uses no CPU. The
// window is RPMA_TCP_POLL_US microseconds (default kDefaultPollUs; 0 =
// always block), read once per engine.
//
// Thread-safety: Add/Modify/Remove/KickAll may be called from any thread,
// also from inside a handler callback. Callbacks of one handler never run
// concurrently (there is one engine thread); a handler may be removed
// while its callback runs (the engine holds a reference meanwhile).
#ifndef RPMA_TCP_ENGINE_H_
#define RPMA_TCP_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rpma::prov::tcp {

class Handler {
 public:
  virtual ~Handler() = default;
  virtual void OnEvent(uint32_t events) = 0;  // epoll events of its fd
  virtual void OnTick(int64_t now_ms) {}      // ~every kTickMs
  virtual void OnKick() {}                    // after KickAll()
};

class Engine {
 public:
  static constexpr int kTickMs = 50;
  static constexpr int64_t kDefaultPollUs = 200;

  // Starts the thread. Returns 0 or a negative errno.
  static int Create(std::unique_ptr<Engine>* out);
  ~Engine();  // stops and joins the thread, drops remaining handlers

  // Registers fd with epoll events; *id names the registration.
  int Add(int fd, uint32_t events, std::shared_ptr<Handler> h, uint64_t* id);
  void Modify(int fd, uint64_t id, uint32_t events);
  // Unregisters (fd must still be open); the engine drops its reference.
  void Remove(int fd, uint64_t id);
  // Calls OnKick() of every handler soon, on the engine thread.
  void KickAll();
  // RNR: connections blocked waiting for a receive register here first, so
  // a receive poster kicks only when someone waits (the tick retries too).
  void AddRnrWaiter(int delta) { rnr_waiters_ += delta; }
  void KickIfWaiting() {
    if (rnr_waiters_.load() > 0) KickAll();
  }
  // Bytes the connections of this engine hold for their peers (RNR stash,
  // queued responses); bounded by Limits::peer_hold_bytes.
  void AddHeld(int64_t delta) {
    held_.fetch_add(delta, std::memory_order_relaxed);
  }
  int64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  Engine() = default;
  void Run();

  int epfd_ = -1;
  int wakefd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> kick_{false};
  std::atomic<int> rnr_waiters_{0};
  std::atomic<int64_t> held_{0};
  int64_t poll_ns_ = kDefaultPollUs * 1000;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Handler>> handlers_;
  uint64_t next_id_ = 1;
  std::thread thread_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_ENGINE_H_
