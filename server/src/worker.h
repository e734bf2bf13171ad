// kv::server::Worker — one of kvserver's fixed set of threads
// (--workers, default: the number of cores) that drive many sessions: its
// sessions' connections are members of the worker's connection group
// (rpma_ext.h), so it waits on one fd for all of their completions and
// connection events (a connection costs its socket and no other
// descriptor), runs each ready session to completion with a
// bounded budget per pass, and at the end of every pass hands the COMMITs
// of all sessions of the pass to their keyspace's CommitPipeline in one
// call per keyspace — one commit point for all of them — before their
// acks go out.
//
// A pass: adopt new sessions; wait (no longer than the nearest session
// deadline; not at all when a session has work left over); for each ready
// session, Pump(budget) — a session with more left over is pumped again
// in the next pass, after the others (one client with 32 in flight
// cannot starve the rest); commit; deadlines due (HELLO, idle, endings);
// destroy finished sessions (fds unwatched first). With spin_us > 0 the
// worker keeps pumping the sessions of its last busy pass for that long
// before it blocks.
//
// Stop() shuts every session down (each handles what it has received,
// then ends as usual) and returns when all are gone and the thread has
// ended.
// Thread-safety: Adopt, sessions(), group(), Stop from any thread;
// everything else on the worker's own thread.
#ifndef KV_SERVER_WORKER_H_
#define KV_SERVER_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/status.h"
#include "session.h"

struct rpma_conn_group;
struct rpma_peer;

namespace kv::server {

class Worker {
 public:
  struct Options {
    uint32_t spin_us = 0;  // busy-poll this long after a busy pass
    size_t budget = 16;    // completions per session per pass
    Stats* stats = nullptr;
    rpma_peer* peer = nullptr;  // the group's device (required)
  };
  static Result<std::unique_ptr<Worker>> Start(int index, Options options);
  ~Worker();  // Stop()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Takes over an attached session (any thread).
  void Adopt(std::unique_ptr<Session> session);
  // The group a session's connection request joins before it is accepted
  // (rpma_conn_req_set_group), so that this worker can drive it.
  rpma_conn_group* group() const { return group_; }
  // Ends every session bound to `ks`, as a shutdown does (each finishes
  // the messages it has, then disconnects): a shard handed off to another
  // node (Server::EndShardSessions). Any thread; returns at once.
  void EndSessionsOf(const OpenKeyspace* ks);
  // Sessions alive on this worker (adopted, not yet destroyed).
  size_t sessions() const { return count_.load(std::memory_order_relaxed); }
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  Worker(int index, Options options) : index_(index), options_(options) {}
  void Loop();
  void TakeInbox();
  // Everything the group has to report, each to its session.
  void TakeGroupReports();
  // Lists s for this pass's pumping, once.
  void MarkReady(Session* s);
  // Commits the queued COMMITs of `sessions`, one pipeline call per
  // keyspace.
  void CommitPass(const std::vector<Session*>& sessions);
  void Spin();
  void RunTimers(Clock::time_point now);
  void Reap();
  void Wake();

  const int index_;
  const Options options_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;                  // eventfd: inbox or stop
  rpma_conn_group* group_ = nullptr;  // deleted after the last session
  std::thread thread_;
  std::mutex inbox_mu_;
  std::vector<std::unique_ptr<Session>> inbox_;
  std::vector<const OpenKeyspace*> to_end_;  // guarded by inbox_mu_
  std::atomic<bool> stop_{false};
  std::atomic<size_t> count_{0};
  bool stopping_ = false;  // Shutdown() sent to every session
  // Worker thread only:
  std::vector<std::unique_ptr<Session>> sessions_;
  // The group reports connections: whose session each is. A connection
  // not (yet) here is one the server has not handed over yet; what the
  // group took for it waits on the connection (TakeInbox looks).
  std::unordered_map<rpma_conn*, Session*> by_conn_;
  std::vector<Session*> ready_;  // this pass
  std::vector<Session*> again_;  // budget ran out: next pass
  std::vector<Session*> busy_;   // the last pass that did work (spin)
  // CommitPass: sessions by keyspace (reused; entries past the pass's
  // count are stale).
  std::vector<std::pair<OpenKeyspace*, std::vector<Session*>>> groups_;
  std::vector<store::CommitRequest> requests_;
  std::vector<Result<store::CommitResult>> results_;
  Clock::time_point next_deadline_ = Clock::time_point::max();
  uint64_t pass_ = 1;  // Session::worker_pass of the sessions in ready_
};

}  // namespace kv::server

#endif  // KV_SERVER_WORKER_H_
