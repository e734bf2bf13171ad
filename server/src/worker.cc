#include "worker.h"

#include <pthread.h>
#include <rpma_ext.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "log.h"

namespace kv::server {
namespace {

// epoll data of the two fds a worker waits on.
constexpr uint64_t kWakeFd = 1;
constexpr uint64_t kGroupFd = 2;
constexpr size_t kMaxEvents = 4;

// A test failpoint (server/README.md, "Failpoints"): with
// KVSERVER_FAILPOINT=slow_pass a worker woken by events sleeps 5 ms
// before its pass, so that a client's pipelined messages reach the
// session together and are handled in one Pump (on an idle machine each
// arrives alone, and the rules for a batch go untested).
bool SlowPassFailpoint() {
  static const bool on = [] {
    const char* v = std::getenv("KVSERVER_FAILPOINT");
    return v != nullptr && std::strcmp(v, "slow_pass") == 0;
  }();
  return on;
}

}  // namespace

Result<std::unique_ptr<Worker>> Worker::Start(int index, Options options) {
  std::unique_ptr<Worker> w(new Worker(index, options));
  w->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  w->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->epoll_fd_ < 0 || w->wake_fd_ < 0) {
    return Status::IoError("worker: epoll/eventfd failed");
  }
  int rc = rpma_conn_group_new(options.peer, &w->group_);
  if (rc != 0) {
    return Status::IoError(std::string("worker: connection group: ") +
                           rpma_err_2str(rc));
  }
  int group_fd = -1;
  (void)rpma_conn_group_get_fd(w->group_, &group_fd);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeFd;
  bool ok = epoll_ctl(w->epoll_fd_, EPOLL_CTL_ADD, w->wake_fd_, &ev) == 0;
  ev.data.u64 = kGroupFd;
  ok = ok && epoll_ctl(w->epoll_fd_, EPOLL_CTL_ADD, group_fd, &ev) == 0;
  if (!ok) return Status::IoError("worker: epoll_ctl failed");
  Worker* raw = w.get();
  w->thread_ = std::thread([raw] { raw->Loop(); });
  return w;
}

Worker::~Worker() {
  Stop();
  // Every session (and its connection) is gone once Stop() returns; a
  // worker that never started has none.
  sessions_.clear();
  if (group_ != nullptr && rpma_conn_group_delete(&group_) != 0) {
    Logf("worker %d: its connection group still has members", index_);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

void Worker::Wake() {
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void Worker::Adopt(std::unique_ptr<Session> session) {
  count_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(std::move(session));
  }
  Wake();
}

void Worker::EndSessionsOf(const OpenKeyspace* ks) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    to_end_.push_back(ks);
  }
  Wake();
}

void Worker::Stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  Wake();
  thread_.join();
}

void Worker::TakeGroupReports() {
  for (;;) {
    rpma_conn* conn = nullptr;
    int what = 0;
    const int rc = rpma_conn_group_next(group_, &conn, &what);
    if (rc == RPMA_E_NO_EVENT) return;
    if (rc != 0) {
      Logf("worker %d: connection group: %s", index_, rpma_err_2str(rc));
      return;
    }
    auto it = by_conn_.find(conn);
    if (it == by_conn_.end()) continue;  // not handed over yet
    Session* s = it->second;
    // A completion needs no call: the group re-armed the CQ, and the
    // pump polls it.
    if (what == RPMA_CONN_GROUP_EVENT) s->OnConnEvents();
    MarkReady(s);
  }
}

void Worker::TakeInbox() {
  std::vector<std::unique_ptr<Session>> in;
  std::vector<const OpenKeyspace*> to_end;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    in.swap(inbox_);
    to_end.swap(to_end_);
  }
  for (std::unique_ptr<Session>& s : in) {
    Session* raw = s.get();
    sessions_.push_back(std::move(s));
    raw->Start();
    by_conn_[raw->conn()] = raw;
    // What the group reported before the hand-over: events wait on the
    // connection, completions in the CQ.
    raw->OnConnEvents();
    if (stopping_) raw->Shutdown();
    MarkReady(raw);
    next_deadline_ = std::min(next_deadline_, raw->NextDeadline());
  }
  for (const OpenKeyspace* ks : to_end) {
    for (const std::unique_ptr<Session>& s : sessions_) {
      if (s->keyspace() != ks) continue;
      s->HandOff();
      MarkReady(s.get());
    }
  }
}

void Worker::MarkReady(Session* s) {
  if (s->worker_pass == pass_) return;  // listed already
  s->worker_pass = pass_;
  ready_.push_back(s);
}

void Worker::CommitPass(const std::vector<Session*>& sessions) {
  // Sessions grouped by keyspace, in pass order (few keyspaces: a linear
  // scan beats a map). `sessions` lists each session once (MarkReady).
  // The groups' vectors are kept from pass to pass: no allocation.
  for (auto& g : groups_) g.second.clear();
  size_t used = 0;
  for (Session* s : sessions) {
    if (s->queued_commits() == 0) continue;
    size_t g = 0;
    while (g < used && groups_[g].first != s->keyspace()) g++;
    if (g == used) {
      if (used == groups_.size()) groups_.emplace_back();
      groups_[used++].first = s->keyspace();
    }
    groups_[g].second.push_back(s);
  }
  for (size_t g = 0; g < used; g++) {
    OpenKeyspace* const ks = groups_[g].first;
    const std::vector<Session*>& members = groups_[g].second;
    requests_.clear();
    for (Session* s : members) {
      for (size_t i = 0; i < s->queued_commits(); i++) {
        requests_.push_back(s->queued_commit(i));
      }
    }
    results_.clear();
    ks->keyspace->pipeline().Commit(requests_.data(), requests_.size(),
                                    &results_);
    if (options_.stats != nullptr) {
      options_.stats->Add(options_.stats->commit_groups);
      if (members.size() > 1) {
        options_.stats->Add(options_.stats->commit_groups_shared);
      }
    }
    size_t at = 0;
    for (Session* s : members) {
      const size_t n = s->queued_commits();
      s->CompleteCommits(results_.data() + at);
      at += n;
    }
  }
}

void Worker::Spin() {
  const auto spin = std::chrono::microseconds(options_.spin_us);
  auto until = Clock::now() + spin;
  epoll_event events[kMaxEvents];
  while (Clock::now() < until) {
    bool any = false;
    for (Session* s : busy_) {
      size_t handled = 0;
      s->Pump(options_.budget, &handled);
      any = any || handled > 0;
    }
    CommitPass(busy_);
    // The group's fd is readable when a member's socket has bytes, also
    // a one-sided READ that yields no completion (tcp): serving it here
    // counts as work, so a client that only reads keeps the spin going
    // instead of paying this worker's wake-up on every get.
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, 0);
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == kWakeFd) return;  // inbox or stop
    }
    if (n > 0) {
      TakeGroupReports();
      // Sessions with news (listed in ready_): the next pass pumps them
      // at once (its wait does not block while ready_ has any).
      if (!ready_.empty()) return;
      any = true;
    }
    if (any) until = Clock::now() + spin;
  }
}

void Worker::RunTimers(Clock::time_point now) {
  if (now < next_deadline_) return;
  next_deadline_ = Clock::time_point::max();
  for (const std::unique_ptr<Session>& s : sessions_) {
    s->OnTimer(now);
    next_deadline_ = std::min(next_deadline_, s->NextDeadline());
  }
}

void Worker::Reap() {
  for (size_t i = 0; i < sessions_.size();) {
    Session* s = sessions_[i].get();
    if (!s->done()) {
      i++;
      continue;
    }
    // Forgotten before the destructor deletes the connection (which
    // leaves the group); nothing of this pass refers to it any more.
    by_conn_.erase(s->conn());
    busy_.erase(std::remove(busy_.begin(), busy_.end(), s), busy_.end());
    again_.erase(std::remove(again_.begin(), again_.end(), s), again_.end());
    // TakeInbox lists new sessions, and one may have ended at once.
    ready_.erase(std::remove(ready_.begin(), ready_.end(), s), ready_.end());
    sessions_[i] = std::move(sessions_.back());
    sessions_.pop_back();
    count_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Worker::Loop() {
  // Named for top -H and gdb: "kvworker-N".
  const std::string name = "kvworker-" + std::to_string(index_);
  pthread_setname_np(pthread_self(), name.c_str());
  epoll_event events[kMaxEvents];
  for (;;) {
    TakeInbox();
    if (stop_.load(std::memory_order_acquire) && !stopping_) {
      stopping_ = true;
      for (const std::unique_ptr<Session>& s : sessions_) s->Shutdown();
      next_deadline_ = Clock::now();  // the endings' deadlines
    }
    Reap();
    if (stopping_ && sessions_.empty() &&
        count_.load(std::memory_order_relaxed) == 0) {
      return;
    }
    int timeout_ms = -1;
    if (!again_.empty() || !ready_.empty()) {
      timeout_ms = 0;
    } else if (next_deadline_ != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(
          next_deadline_ - Clock::now());
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000));
    }
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    if (n > 0 && SlowPassFailpoint()) usleep(5000);
    // A readable group fd is work even when it reports nothing: the
    // group served a peer's one-sided READ on this thread (tcp).
    bool served = false;
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == kWakeFd) {
        uint64_t v;
        (void)!read(wake_fd_, &v, sizeof(v));
      } else {
        TakeGroupReports();
        served = true;
      }
    }
    // Left-over work of the last pass goes after this pass's new work.
    for (Session* s : again_) MarkReady(s);
    again_.clear();
    busy_.clear();
    for (Session* s : ready_) {
      size_t handled = 0;
      if (s->Pump(options_.budget, &handled)) again_.push_back(s);
      if (handled > 0) busy_.push_back(s);
    }
    CommitPass(ready_);
    for (Session* s : ready_) {
      next_deadline_ = std::min(next_deadline_, s->NextDeadline());
    }
    ready_.clear();
    pass_++;
    // Spin after a pass that did work: messages handled, or one-sided
    // reads served (a client that only gets never makes a session busy).
    if (options_.spin_us > 0 && (served || !busy_.empty())) Spin();
    RunTimers(Clock::now());
  }
}

}  // namespace kv::server
