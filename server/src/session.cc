// Session lifecycle: admission-time setup, the poll loop, connection
// events and teardown (session_io.cc reaps completions and sends;
// session_messages.cc handles the messages).
#include "session.h"

#include <fcntl.h>
#include <librpma.h>
#include <poll.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "log.h"

namespace kv::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

const char* EndName(int e) {
  static const char* const kNames[] = {
      "open",          "bye",      "peer gone",   "error",
      "hello timeout", "shutdown", "idle timeout"};
  return kNames[e];
}

}  // namespace

Session::Session(const SessionEnv& env, uint64_t id)
    : env_(env),
      id_(id),
      recv_slots_(env.max_inflight),
      send_slots_(2u * env.max_inflight + 1),
      buf_((recv_slots_ + send_slots_) * kSlot, 0) {
  for (size_t i = 0; i < send_slots_; i++) free_send_.push_back(i);
}

Result<std::unique_ptr<Session>> Session::Create(const SessionEnv& env,
                                                 uint64_t id) {
  std::unique_ptr<Session> s(new Session(env, id));
  int rc = rpma_mr_reg(env.peer, s->buf_.data(), s->buf_.size(),
                       RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &s->mr_);
  if (rc) {
    return Status::Unavailable(std::string("registering message buffers: ") +
                               rpma_err_2str(rc));
  }
  return s;
}

Session::~Session() {
  // Teardown order: grant first (its write region must go before its
  // segment is sealed; GrantHolder does both), then the connection, then
  // the buffers its posted receives pointed into.
  group_.reset();  // pending commits reach their commit point first
  grant_.reset();
  if (conn_ != nullptr) rpma_conn_delete(&conn_);
  if (mr_ != nullptr) rpma_mr_dereg(&mr_);
}

bool Session::Bind(OpenKeyspace* ks, Refusal* /*refusal*/) {
  // Lazy grants: admission takes no segment (an idle or reading
  // connection holds none); the client's first put or delete sends REFILL,
  // which is rate-limited and bounded by the keyspace's share.
  GrantHolder::Limits limits;
  limits.quota = env_.grant_quotas != nullptr
                     ? env_.grant_quotas->For(ks->keyspace.get())
                     : nullptr;
  limits.refill_rate = env_.refill_rate;
  limits.refill_burst = env_.refill_burst;
  grant_ = std::make_unique<GrantHolder>(env_.peer, ks->keyspace.get(), limits);
  ks_ = ks;
  group_ = std::make_unique<store::CommitGroup>(ks->keyspace.get());
  hello_pending_ = false;
  last_message_ = Clock::now();
  awaiting_hello_.store(false, std::memory_order_release);
  return true;
}

// A test failpoint (server/README.md, "Failpoints"): with
// KVSERVER_FAILPOINT=post_receives the next PostReceives fails after its
// first receive, once — the failure path cannot be reached otherwise (the
// receive queue is sized to the slots).
static bool PostReceivesFailpoint() {
  static std::atomic<bool> used{false};
  const char* v = std::getenv("KVSERVER_FAILPOINT");
  return v != nullptr && std::strcmp(v, "post_receives") == 0 &&
         !used.exchange(true);
}

Status Session::PostReceives(rpma_conn_req* req) {
  for (size_t i = 0; i < recv_slots_; i++) {
    int rc = rpma_conn_req_recv(req, mr_, i * kSlot, kSlot,
                                reinterpret_cast<void*>(i + 1));
    if (rc == 0 && i == 0 && PostReceivesFailpoint()) rc = RPMA_E_NOMEM;
    if (rc) {
      return Status::Unavailable(std::string("posting receives: ") +
                                 rpma_err_2str(rc));
    }
  }
  return Status::Ok();
}

protocol::Accept Session::AcceptData() const {
  protocol::Accept a;
  a.session_id = id_;
  a.max_inflight = env_.max_inflight;
  if (ks_ == nullptr) {
    a.admit = protocol::Admit::kHelloRequired;
    a.reason = "send HELLO";
    return a;
  }
  const store::Keyspace& k = *ks_->keyspace;
  const store::KeyspaceInfo info = k.info();
  a.admit = protocol::Admit::kOk;
  a.flags = k.granularity() == "cache line" ? protocol::kAcceptPmem : 0;
  a.keyspace_id = k.id();
  a.bucket_count = info.bucket_count;
  a.log_size = ks_->region.log_size;
  a.segment_size = info.segment_size;
  a.max_value_size = k.max_value_size();
  a.index_offset = ks_->region.index_offset;
  a.log_offset = ks_->region.log_offset;
  std::memcpy(a.read_desc, ks_->read_desc, sizeof(a.read_desc));
  a.grant = grant_->Describe();
  return a;
}

void Session::Run() {
  hello_pending_ = ks_ == nullptr;
  int ev_fd = -1, cq_fd = -1;
  rpma_conn_get_event_fd(conn_, &ev_fd);
  rpma_conn_get_cq(conn_, &cq_);
  rpma_cq_get_fd(cq_, &cq_fd);
  SetNonBlocking(ev_fd);
  SetNonBlocking(cq_fd);
  const auto hello_deadline = Clock::now() + env_.hello_timeout;
  last_message_ = Clock::now();
  while (end_ == End::kNone) {
    int timeout_ms = 1000;
    if (!hello_pending_ && env_.idle_timeout.count() > 0) {
      auto left = std::chrono::duration_cast<milliseconds>(
          last_message_ + env_.idle_timeout - Clock::now());
      if (left.count() <= 0) {
        EndIdle();
        break;
      }
      if (left.count() < timeout_ms) {
        timeout_ms = static_cast<int>(left.count()) + 1;
      }
    }
    if (hello_pending_) {
      auto left = std::chrono::duration_cast<milliseconds>(hello_deadline -
                                                           Clock::now());
      if (left.count() <= 0) {
        EndWith(End::kHelloTimeout);
        Refusal r{protocol::Admit::kMalformed,
                  "no HELLO within " +
                      std::to_string(env_.hello_timeout.count()) + " ms"};
        RefuseHello(r);
        break;
      }
      timeout_ms = static_cast<int>(left.count()) + 1;
    }
    // Optional busy-poll before blocking: completions that arrive within
    // spin_us are handled without a wakeup (measured: server/README.md).
    if (env_.spin_us > 0 && !hello_pending_) {
      const auto spin_end =
          Clock::now() + std::chrono::microseconds(env_.spin_us);
      bool got = false;
      while (!got && end_ == End::kNone && Clock::now() < spin_end) {
        got = DrainSome();
      }
      if (got) continue;
    }
    pollfd fds[3] = {
        {cq_fd, POLLIN, 0}, {ev_fd, POLLIN, 0}, {env_.stop_fd, POLLIN, 0}};
    int n = poll(fds, 3, timeout_ms);
    if (n < 0) continue;  // EINTR
    if (fds[0].revents) {
      // Consumes the notification and re-arms the CQ; then drain, so a
      // completion that arrives after the drain raises a new event.
      (void)rpma_cq_wait(cq_);
      Drain();
    }
    if (fds[1].revents) HandleEvents();
    if (fds[2].revents && end_ == End::kNone) {
      Drain();  // finish what was received before the shutdown
      EndWith(End::kShutdown);
    }
  }
  Finish();
}

void Session::HandleEvents() {
  for (;;) {
    rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    int rc = rpma_conn_next_event(conn_, &ev);
    if (rc) return;  // RPMA_E_NO_EVENT
    if (ev == RPMA_CONN_ESTABLISHED) {
      established_ = true;
    } else if (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST) {
      closed_ = true;
      Drain();  // messages that arrived before the close still count
      end_detail_ = rpma_utils_conn_event_2str(ev);
      EndWith(End::kPeerGone);
      return;
    }
  }
}

void Session::EndIdle() {
  const std::string why = "no message for " +
                          std::to_string(env_.idle_timeout.count()) +
                          " ms (--idle_timeout_ms): connection closed";
  uint8_t payload[protocol::kMaxMessage - protocol::kHeaderSize];
  const size_t n = protocol::EncodeStatusText(StatusCode::kTimedOut, why,
                                              payload, sizeof(payload));
  Send(protocol::Type::kError, 0, payload, n);
  end_detail_ = why;
  EndWith(End::kIdle);
}

void Session::Finish() {
  FinishCommits();  // before the grant's segment is sealed or returned
  // An idle connection has nothing in flight: its tail is given back.
  const bool give_back =
      end_ == End::kBye || end_ == End::kShutdown || end_ == End::kIdle;
  if (grant_ != nullptr && grant_->held()) {
    const uint32_t segment = grant_->grant().segment;
    Status st = give_back ? grant_->Return() : grant_->Seal();
    if (!st.ok()) {
      Logf("session %llu: %s segment %u: %s",
           static_cast<unsigned long long>(id_),
           give_back ? "returning" : "sealing", segment, st.ToString().c_str());
    }
  }
  // Let replies already posted (an ERROR, a refused WELCOME) reach the
  // client before the disconnect; bounded.
  const auto deadline = Clock::now() + milliseconds(1000);
  while (!closed_ && free_send_.size() < send_slots_ &&
         Clock::now() < deadline) {
    ibv_wc wc;
    if (rpma_cq_get_wc(cq_, 1, &wc, nullptr) == 0) {
      if (wc.wr_id >= kSendBase) free_send_.push_back(wc.wr_id - kSendBase);
    } else {
      std::this_thread::yield();
    }
  }
  if (end_ != End::kBye && end_ != End::kShutdown && end_ != End::kIdle) {
    env_.stats->Add(env_.stats->sessions_lost);
  }
  Logf("session %llu closed (%s%s%s) keyspace '%s': %llu commits",
       static_cast<unsigned long long>(id_), EndName(static_cast<int>(end_)),
       end_detail_.empty() ? "" : ": ", end_detail_.c_str(),
       ks_ != nullptr ? ks_->keyspace->name().c_str() : "-",
       static_cast<unsigned long long>(commits_));
  if (!closed_ && (end_ == End::kError || end_ == End::kHelloTimeout ||
                   end_ == End::kIdle)) {
    // After an ERROR or a refused WELCOME let the client hang up first
    // (bounded): it reads the reply before it sees a CLOSED from us.
    WaitClosed(milliseconds(250));
  }
  rpma_conn_disconnect(conn_);
  if (!closed_) WaitClosed(milliseconds(1000));
  rpma_conn_delete(&conn_);
  env_.stats->connections_active.fetch_sub(1, std::memory_order_relaxed);
  done_.store(true, std::memory_order_release);
}

void Session::WaitClosed(milliseconds timeout) {
  int ev_fd = -1;
  rpma_conn_get_event_fd(conn_, &ev_fd);
  const auto deadline = Clock::now() + timeout;
  while (!closed_ && Clock::now() < deadline) {
    pollfd p{ev_fd, POLLIN, 0};
    poll(&p, 1, 50);
    rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    while (rpma_conn_next_event(conn_, &ev) == 0) {
      if (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST) closed_ = true;
    }
  }
}

std::string Session::ServerText() const {
  std::string s = "version " + std::to_string(protocol::kVersion) + "\n";
  s += "provider " + env_.provider + "\n";
  s += "session_id " + std::to_string(id_) + "\n";
  s += "max_inflight " + std::to_string(env_.max_inflight) + "\n";
  if (ks_ != nullptr) {
    const store::Keyspace& k = *ks_->keyspace;
    const store::KeyspaceInfo info = k.info();
    s += "granularity " + k.granularity() + "\n";
    s += "keyspace " + k.name() + "\n";
    s += "keyspace_id " + std::to_string(k.id()) + "\n";
    s += "bucket_count " + std::to_string(info.bucket_count) + "\n";
    s += "log_size " + std::to_string(info.log_size) + "\n";
    s += "segment_size " + std::to_string(info.segment_size) + "\n";
    s += "max_value_size " + std::to_string(k.max_value_size()) + "\n";
  }
  return s;
}

}  // namespace kv::server
