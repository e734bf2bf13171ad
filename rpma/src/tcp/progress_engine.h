// The progress engine of a tcp Pd: one thread with an epoll set serving
// every listener and connection socket of the Pd. It acts as the NIC:
// it executes the peer's one-sided operations on registered memory
// without any call from the application.
//
// Leader/followers (docs/tcp_provider.md, "Progress"): a connection whose
// socket an application thread serves itself (waiting on its CQ's fd,
// progress_group.h) is *delegated*: the engine stops watching its socket
// (Unwatch: it moves to a second epoll set the thread does not wait on)
// and only checks it every kHandoverMs (one non-blocking epoll_wait on
// that set, however many are delegated); a socket found ready at two
// checks in a row with no application read in between is taken back
// (Rewatch, served at once). So a peer's one-sided request to a delegated
// connection nobody serves waits at most 2 * kHandoverMs, once; the
// connection stays the engine's until an application thread serves it
// again. Ticks (timeouts, limits) run for every handler, delegated or not.
//
// Deferred flushes: a handler may ask to be called back (OnDeferred) after
// kDeferUs unless it cancels first (delayed acknowledgements, tcp_conn.h);
// one timerfd. Arming and cancelling cost no syscall while the timer is
// armed: a cancel leaves it armed, and its expiry calls back what is due
// (within kDeferSlackUs) and re-arms for the earliest left. So a stream
// of deferrals that are all cancelled costs one timerfd_settime and one
// engine wake-up per kDeferUs, not two syscalls per deferral.
//
// Polling: by default the thread blocks in epoll_wait. With
// RPMA_TCP_POLL_US=N (read once per engine) it spins (non-blocking
// epoll_wait, yielding the CPU between empty polls) for N microseconds
// after each socket event before blocking again.
//
// Idle cost: the 50 ms tick while any handler that needs it is registered
// (every connection; a listener only while its accepts are paused), plus
// one check every kHandoverMs while any connection is delegated. With
// nothing but listeners the thread sleeps until an event: an idle server
// with no client costs no wake-up here.
//
// Thread-safety: Add/Modify/Remove/Unwatch/Rewatch/DeferFlush/
// CancelDeferred/KickAll may be called from any thread, also from inside a
// handler callback. The engine's callbacks of one handler never run
// concurrently (there is one engine thread; application threads reach a
// connection through its own mutex, tcp_conn.h); a handler may be removed
// while its callback runs (the engine holds a reference meanwhile).
#ifndef RPMA_TCP_PROGRESS_ENGINE_H_
#define RPMA_TCP_PROGRESS_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace rpma::prov::tcp {

class Handler {
 public:
  virtual ~Handler() = default;
  virtual void OnEvent(uint32_t events) = 0;  // epoll events of its fd
  virtual void OnTick(int64_t now_ms) {}      // ~every kTickMs
  virtual void OnKick() {}                    // after KickAll()
  // Delegated (Unwatch) and its fd ready at a check (every kHandoverMs);
  // `first`: it was not ready at the previous check.
  virtual void OnCheck(bool first) {}
  // DeferFlush()ed and not cancelled: about kDeferUs later.
  virtual void OnDeferred() {}
};

class ProgressEngine {
 public:
  static constexpr int kTickMs = 50;
  static constexpr int kHandoverMs = 10;
  static constexpr int64_t kDeferUs = 500;
  static constexpr int64_t kDeferSlackUs = 50;
  static constexpr int64_t kDefaultPollUs = 0;  // block

  // Starts the thread. Returns 0 or a negative errno.
  static int Create(std::unique_ptr<ProgressEngine>* out);
  ~ProgressEngine();  // stops and joins the thread, drops remaining handlers

  // Registers fd with epoll events; *id names the registration. A handler
  // added with ticks = false gets OnTick only while some other handler
  // needs ticks or it holds them (HoldTicks).
  int Add(int fd, uint32_t events, std::shared_ptr<Handler> h, uint64_t* id,
          bool ticks = true);
  // +1 / -1: a handler added without ticks needs them for a while (a
  // listener whose accepts are paused retries on the tick).
  void HoldTicks(int delta);
  // Also for a delegated fd (its events for the checks).
  void Modify(int fd, uint64_t id, uint32_t events);
  // Unregisters (fd must still be open); the engine drops its reference.
  void Remove(int fd, uint64_t id);
  // Delegation: stops / resumes watching fd (the handler stays registered;
  // Rewatch re-adds it with `events`).
  void Unwatch(int fd, uint64_t id, uint32_t events);
  void Rewatch(int fd, uint64_t id, uint32_t events);
  // Calls id's OnDeferred() about kDeferUs from now unless CancelDeferred
  // comes first. Idempotent per id.
  void DeferFlush(uint64_t id);
  void CancelDeferred(uint64_t id);
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
  ProgressEngine() = default;
  void Run();
  void RunChecks();
  void RunDeferred();
  void ArmTimer(int64_t in_ns);  // under mu_; in_ns > 0
  void Wake();                   // the thread returns from its epoll_wait
  // The handlers of ids that are still registered (under mu_).
  void Collect(const std::vector<uint64_t>& ids,
               std::vector<std::shared_ptr<Handler>>* out);

  int epfd_ = -1;
  int wakefd_ = -1;
  int timerfd_ = -1;
  int shadowfd_ = -1;  // epoll set of the delegated fds (never waited on)
  std::atomic<bool> stop_{false};
  std::atomic<bool> kick_{false};
  std::atomic<int> rnr_waiters_{0};
  std::atomic<int64_t> held_{0};
  int64_t poll_ns_ = kDefaultPollUs * 1000;
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Handler>> handlers_;
  uint64_t next_id_ = 1;
  std::unordered_set<uint64_t> delegated_;  // Unwatch()ed ids
  std::unordered_set<uint64_t> tickless_;   // added with ticks = false
  int ticking_ = 0;  // handlers that need ticks, plus HoldTicks (mu_)
  std::unordered_set<uint64_t> was_ready_;  // ready at the last check
  struct Deferred {
    uint64_t id;
    int64_t deadline_ns;  // NowNs() clock
  };
  std::vector<Deferred> deferred_;  // DeferFlush()ed, not yet called back
  bool timer_armed_ = false;        // it fires by every deadline above
  std::thread thread_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_PROGRESS_ENGINE_H_
