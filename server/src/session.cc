// Session lifecycle: admission-time setup, start, deadlines, connection
// events and the ending (session_io.cc reaps completions and sends;
// session_messages.cc handles the messages).
#include "session.h"

#include <fcntl.h>
#include <librpma.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "log.h"

namespace kv::server {
namespace {

using std::chrono::milliseconds;

const char* EndName(int e) {
  static const char* const kNames[] = {
      "open",          "bye",      "peer gone",    "error",
      "hello timeout", "shutdown", "idle timeout", "handed off"};
  return kNames[e];
}

}  // namespace

Session::Session(const SessionEnv& env, uint64_t id)
    : env_(env),
      id_(id),
      recv_slots_(env.max_inflight),
      // A reply per request in flight, one spare (an ERROR); a reply whose
      // slot has not completed yet waits in the outbox.
      send_slots_(env.max_inflight + 1u) {
  for (size_t i = 0; i < send_slots_; i++) free_send_.push_back(i);
}

Result<std::unique_ptr<Session>> Session::Create(const SessionEnv& env,
                                                 uint64_t id) {
  std::unique_ptr<Session> s(new Session(env, id));
  // Anonymous pages: zero, and resident only once a message touches them
  // (an idle connection's slots cost no memory).
  s->buf_size_ = (s->recv_slots_ + s->send_slots_) * kSlot;
  void* p = mmap(nullptr, s->buf_size_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    s->buf_size_ = 0;
    return Status::Unavailable("mapping message buffers failed");
  }
  s->buf_ = static_cast<uint8_t*>(p);
  int rc = rpma_mr_reg(env.peer, s->buf_, s->buf_size_,
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
  SetAwaitingHello(false);
  if (ks_ != nullptr) ks_->sessions.fetch_sub(1, std::memory_order_acq_rel);
  grant_.reset();
  if (conn_ != nullptr) rpma_conn_delete(&conn_);
  if (mr_ != nullptr) rpma_mr_dereg(&mr_);
  if (buf_ != nullptr) munmap(buf_, buf_size_);
}

bool Session::Bind(OpenKeyspace* ks, Refusal* /*refusal*/, bool peer_node) {
  peer_node_ = peer_node;
  ks->sessions.fetch_add(1, std::memory_order_acq_rel);
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
  hello_pending_ = false;
  last_message_ = Clock::now();
  awaiting_hello_.store(false, std::memory_order_release);
  return true;
}

void Session::SetAwaitingHello(bool waiting) {
  if (env_.pending_hellos == nullptr || waiting == counted_pending_hello_) {
    return;
  }
  counted_pending_hello_ = waiting;
  if (waiting) {
    env_.pending_hellos->fetch_add(1, std::memory_order_relaxed);
  } else {
    env_.pending_hellos->fetch_sub(1, std::memory_order_relaxed);
  }
}

void Session::Attach(rpma_conn* conn) {
  conn_ = conn;
  if (grant_ != nullptr) grant_->SetConnection(conn);
  rpma_conn_get_cq(conn_, &cq_);
  SetAwaitingHello(ks_ == nullptr);
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
  if (env_.shards != nullptr) {
    // The epoch the client must send (it also learns it from the map).
    (void)env_.shards->CheckAdmit(ks_->keyspace->name(), &a.map_epoch);
  }
  a.flags = k.granularity() == "cache line" ? protocol::kAcceptPmem : 0;
  a.keyspace_id = k.id();
  // The index's size now (it grows online; KeyspaceTable's cached region
  // holds only what never changes: the region, index and log offsets).
  // A client adopts later growths from the index header.
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

void Session::Start() {
  hello_pending_ = ks_ == nullptr;
  const auto now = Clock::now();
  hello_deadline_ = now + env_.hello_timeout;
  last_message_ = now;
}

Session::Clock::time_point Session::NextDeadline() const {
  if (done()) return Clock::time_point::max();
  if (phase_ != Phase::kOpen) return phase_deadline_;
  Clock::time_point t = Clock::time_point::max();
  if (!outbox_.empty()) t = outbox_since_ + kReplyTimeout;
  if (hello_pending_) {
    t = std::min(t, hello_deadline_);
  } else if (env_.idle_timeout.count() > 0) {
    t = std::min(t, last_message_ + env_.idle_timeout);
  }
  return t;
}

void Session::OnTimer(Clock::time_point now) {
  if (done()) return;
  if (phase_ != Phase::kOpen) {
    AdvanceEnd(now);
    return;
  }
  if (!outbox_.empty() && now >= outbox_since_ + kReplyTimeout) {
    end_detail_ = "client does not take its replies";
    EndWith(End::kPeerGone);
  } else if (hello_pending_ && now >= hello_deadline_) {
    EndWith(End::kHelloTimeout);
    RefuseHello({protocol::Admit::kMalformed,
                 "no HELLO within " +
                     std::to_string(env_.hello_timeout.count()) + " ms"});
  } else if (!hello_pending_ && env_.idle_timeout.count() > 0 &&
             now >= last_message_ + env_.idle_timeout) {
    EndIdle();
  }
  if (end_ != End::kNone) BeginEnd();
}

void Session::NoteClosedEvents() {
  for (;;) {
    rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    if (rpma_conn_next_event(conn_, &ev) != 0) return;  // RPMA_E_NO_EVENT
    if (ev == RPMA_CONN_ESTABLISHED) {
      established_ = true;
    } else if (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST) {
      if (!closed_ && end_detail_.empty()) {
        end_detail_ = rpma_utils_conn_event_2str(ev);
      }
      closed_ = true;
    }
  }
}

void Session::OnConnEvents() {
  if (done()) return;
  const bool was_closed = closed_;
  NoteClosedEvents();
  if (phase_ != Phase::kOpen) {
    AdvanceEnd(Clock::now());
    return;
  }
  if (closed_ && !was_closed) {
    Pump(0);  // messages that arrived before the close still count
    EndWith(End::kPeerGone);
    BeginEnd();
  }
}

void Session::Shutdown() {
  if (done() || phase_ != Phase::kOpen) return;
  Pump(0);  // finish what was received before the shutdown
  EndWith(End::kShutdown);
  BeginEnd();
}

void Session::HandOff() {
  if (done() || phase_ != Phase::kOpen) return;
  Pump(0);               // answer what was received
  FlushQueuedCommits();  // the acks go before the ERROR
  const std::string why =
      "shard '" + (ks_ != nullptr ? ks_->keyspace->name() : std::string()) +
      "' was handed to another node: nothing after this was processed; "
      "re-read the map";
  uint8_t payload[protocol::kMaxMessage - protocol::kHeaderSize];
  const size_t n = protocol::EncodeStatusText(StatusCode::kWrongShard, why,
                                              payload, sizeof(payload));
  Send(protocol::Type::kError, 0, payload, n);
  end_detail_ = "moved to another node";
  EndWith(End::kHandedOff);
  BeginEnd();
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

void Session::BeginEnd() {
  if (phase_ != Phase::kOpen || end_ == End::kNone) return;
  phase_ = Phase::kDrainReplies;  // first: the acks below may end it too
  FlushQueuedCommits();  // before the grant's segment is sealed or returned
  SetAwaitingHello(false);
  // An idle connection has nothing in flight: its tail is given back.
  const bool give_back = end_ == End::kBye || end_ == End::kShutdown ||
                         end_ == End::kIdle || end_ == End::kHandedOff;
  // Handed off: the grant stays writable until the client hung up, so a
  // record it writes meanwhile lands (uncommitted) instead of failing the
  // connection before the ERROR that tells it to retry elsewhere is read.
  if (grant_ != nullptr && grant_->held() && end_ != End::kHandedOff) {
    const uint32_t segment = grant_->grant().segment;
    Status st = give_back ? grant_->Return() : grant_->Seal();
    if (!st.ok()) {
      Logf("session %llu: %s segment %u: %s",
           static_cast<unsigned long long>(id_),
           give_back ? "returning" : "sealing", segment, st.ToString().c_str());
    }
  }
  if (!give_back) env_.stats->Add(env_.stats->sessions_lost);
  Logf("session %llu closed (%s%s%s) keyspace '%s': %llu commits",
       static_cast<unsigned long long>(id_), EndName(static_cast<int>(end_)),
       end_detail_.empty() ? "" : ": ", end_detail_.c_str(),
       ks_ != nullptr ? ks_->keyspace->name().c_str() : "-",
       static_cast<unsigned long long>(commits_));
  // Let replies already posted (an ERROR, a refused WELCOME) reach the
  // client before the disconnect; bounded.
  phase_deadline_ = Clock::now() + milliseconds(1000);
  AdvanceEnd(Clock::now());
}

void Session::AdvanceEnd(Clock::time_point now) {
  if (phase_ == Phase::kDrainReplies) {
    if (!closed_) {
      (void)ReapSends();
      FlushOutbox();
    }
    const bool drained = outbox_.empty() && free_send_.size() == send_slots_;
    if (!closed_ && !drained && now < phase_deadline_) return;
    phase_ = Phase::kAwaitHangup;
    // After an ERROR or a refused WELCOME let the client hang up first
    // (bounded): it reads the reply before it sees a CLOSED from us.
    const bool wait_hangup = end_ == End::kError ||
                             end_ == End::kHelloTimeout || end_ == End::kIdle ||
                             end_ == End::kHandedOff;
    phase_deadline_ = now + (wait_hangup ? milliseconds(250) : milliseconds(0));
  }
  if (phase_ == Phase::kAwaitHangup) {
    if (!closed_ && now < phase_deadline_) return;
    rpma_conn_disconnect(conn_);
    phase_ = Phase::kDisconnecting;
    phase_deadline_ = now + milliseconds(1000);
    NoteClosedEvents();
  }
  if (phase_ == Phase::kDisconnecting) {
    if (!closed_ && now < phase_deadline_) return;
    // The connection is deleted by the destructor, after the worker has
    // stopped watching its fds.
    env_.stats->connections_active.fetch_sub(1, std::memory_order_relaxed);
    done_.store(true, std::memory_order_release);
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
