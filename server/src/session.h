// kv::server::Session — one client connection: its keyspace (the shared
// read region), its grant (write region), its posted receives and send
// buffers, and the handling of its messages (HELLO, COMMIT, REFILL, INFO,
// BYE), each answered in order.
//
// Life: the acceptor Create()s a session, Bind()s it to an admitted
// keyspace (or leaves it waiting for HELLO), PostReceives() on the
// request, accepts with AcceptData() and hands the connection to Run()
// on the session's own thread. Run() returns when the client says BYE,
// disconnects or dies (CLOSED/LOST), breaks the protocol (ERROR sent),
// does not send HELLO in time, sends nothing for --idle_timeout_ms once
// admitted (ERROR timed_out, then its grant is returned), or the server
// shuts down (messages already received are still handled first).
// Grants are lazy: Bind takes none; the client's first REFILL does.
// Commits: the COMMITs of one reaped batch of completions go into the
// session's CommitGroup and are acknowledged together after its one
// persist point (FinishCommits), or one by one without --group_commit.
// Buffers: the receive slots and send slots are one registration owned by
// the session; a posted receive owns its slot until its completion is
// reaped, a posted send until its completion. Teardown order: grant
// (deregistered, then sealed or returned), connection (disconnect,
// delete), then the message buffers.
// Thread-safety: Run() on one thread; done() from any.
#ifndef KV_SERVER_SESSION_H_
#define KV_SERVER_SESSION_H_

#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "admission.h"
#include "grant_quota.h"
#include "grants.h"
#include "keyspace_table.h"
#include "kv/protocol.h"
#include "kv/store/commit_group.h"
#include "refusal_log.h"
#include "stats.h"
#include "tickets.h"

struct rpma_peer;
struct rpma_conn;
struct rpma_conn_req;
struct rpma_mr_local;
struct rpma_cq;

namespace kv::server {

struct SessionEnv {
  // The protection domain of the session's queue pair: its keyspace's, or
  // (waiting for HELLO) the listener's empty one. Message buffers and
  // grants are registered here.
  rpma_peer* peer = nullptr;
  Tickets* tickets = nullptr;  // issued to HELLO-admitted clients
  // INFO shows every keyspace (names, stats); else only the session's own.
  bool info_all_keyspaces = false;
  Admission* admission = nullptr;
  KeyspaceTable* keyspaces = nullptr;
  Stats* stats = nullptr;
  RefusalLog* refusal_log = nullptr;  // refused COMMITs, summarized
  int stop_fd = -1;                   // readable once the server shuts down
  uint16_t max_inflight = 32;
  std::chrono::milliseconds hello_timeout{2000};
  std::chrono::milliseconds idle_timeout{0};  // 0: never
  GrantQuotas* grant_quotas = nullptr;        // nullptr: no keyspace share
  uint32_t refill_rate = 20;
  uint32_t refill_burst = 8;
  std::string provider;
  uint32_t spin_us = 0;      // busy-poll the CQ this long before blocking
  bool group_commit = true;  // one persist point per reaped batch
};

class Session {
 public:
  // Registers the message buffers. Errors: unavailable.
  static Result<std::unique_ptr<Session>> Create(const SessionEnv& env,
                                                 uint64_t id);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Uses `ks`; takes no grant (the client's first REFILL does). false
  // with *refusal (cannot fail today; kept for the callers' shape).
  bool Bind(OpenKeyspace* ks, Refusal* refusal);
  // Posts every receive on the request before it is accepted, so a
  // message sent right after ESTABLISHED finds a buffer.
  Status PostReceives(rpma_conn_req* req);
  // What to accept with: ok + geometry + descriptors when bound, else
  // "hello required".
  protocol::Accept AcceptData() const;
  // The accepted connection (owned from now on).
  void Attach(rpma_conn* conn) {
    conn_ = conn;
    if (grant_ != nullptr) grant_->SetConnection(conn);
  }
  // The session's thread body.
  void Run();

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Not admitted yet (a HELLO connection before its HELLO was accepted,
  // its refusal included); false once Bind succeeded. Any thread.
  bool awaiting_hello() const {
    return awaiting_hello_.load(std::memory_order_acquire);
  }
  uint64_t id() const { return id_; }

 private:
  enum class End {
    kNone,
    kBye,
    kPeerGone,
    kError,
    kHelloTimeout,
    kShutdown,
    kIdle
  };
  static constexpr size_t kSlot = protocol::kMaxMessage;  // buffer slot size
  // op_context values: receive slot i is i + 1; send slot i is kSendBase + i.
  static constexpr uint64_t kSendBase = 1u << 20;

  Session(const SessionEnv& env, uint64_t id);
  // Reaps every available completion (and those deferred by a send that
  // waited for a slot), handling received messages in order.
  void Drain();
  // Reaps what is available now (one poll); true if anything was.
  bool DrainSome();
  void HandleCompletion(const ibv_wc& wc);
  void HandleMessage(const uint8_t* data, size_t len);
  void HandleHello(const protocol::Header& h, const protocol::Hello& hello);
  void HandleCommit(const protocol::Header& h, const protocol::Commit& c);
  // The commit point of the COMMITs handled since the last call (group
  // commit), then their acks, in order. Called after every reaped batch
  // of completions and before any other message is handled.
  void FinishCommits();
  void HandleRefill(const protocol::Header& h, bool for_delete);
  void HandleInfo(const protocol::Header& h, protocol::InfoTopic topic);
  void HandleEvents();
  // Sends ERROR and ends the session (protocol violation).
  void Fail(uint32_t request_id, StatusCode code, const std::string& why);
  // WELCOME with a refusal, then end.
  void RefuseHello(const Refusal& r);
  // Sends one message; waits (bounded) for a free send slot.
  void Send(protocol::Type type, uint32_t request_id, const uint8_t* payload,
            size_t len);
  bool WaitSendSlot(std::chrono::milliseconds timeout);
  void RepostReceive(size_t slot);
  void Finish();
  // --idle_timeout_ms passed without a message: ERROR timed_out, end.
  void EndIdle();
  // Waits (bounded) for CLOSED/LOST on the connection's event fd.
  void WaitClosed(std::chrono::milliseconds timeout);
  std::string ServerText() const;
  void EndWith(End e) {
    if (end_ == End::kNone) end_ = e;
  }

  const SessionEnv env_;
  const uint64_t id_;
  const size_t recv_slots_;
  const size_t send_slots_;
  std::vector<uint8_t> buf_;  // recv slots, then send slots
  rpma_mr_local* mr_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_cq* cq_ = nullptr;
  OpenKeyspace* ks_ = nullptr;
  std::unique_ptr<GrantHolder> grant_;
  std::unique_ptr<store::CommitGroup> group_;  // with grant_
  struct PendingAck {
    uint32_t request_id = 0;
    protocol::CommitAck ack;
  };
  std::vector<PendingAck> acks_;  // sent by FinishCommits
  std::vector<size_t> free_send_;
  std::deque<ibv_wc> deferred_;  // receives reaped while waiting to send
  bool hello_pending_ = false;
  bool established_ = false;
  bool closed_ = false;  // CLOSED/LOST seen
  End end_ = End::kNone;
  std::string end_detail_;
  uint64_t commits_ = 0;
  std::chrono::steady_clock::time_point last_message_;  // received
  std::atomic<bool> awaiting_hello_{true};
  std::atomic<bool> done_{false};
};

}  // namespace kv::server

#endif  // KV_SERVER_SESSION_H_
