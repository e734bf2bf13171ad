// kv::server::Session — one client connection: its keyspace (the shared
// read region), its grant (write region), its posted receives and send
// buffers, and the handling of its messages (HELLO, COMMIT, REFILL, INFO,
// BYE), each answered in order.
//
// Life: the acceptor Create()s a session, Bind()s it to an admitted
// keyspace (or leaves it waiting for HELLO), PostReceives() on the
// request (which joined the worker's connection group), accepts with
// AcceptData(), Attach()es the connection and hands
// the session to a Worker (worker.h), which drives it from then on, on
// the worker's thread only: Start(), then Pump() whenever its CQ has
// completions, OnConnEvents() when its connection reports an event,
// OnTimer() at its deadlines. No call blocks. A session ends when the
// client says BYE, disconnects or dies (CLOSED/LOST), breaks the protocol
// (ERROR sent), does not send HELLO in time, sends nothing for
// --idle_timeout_ms once admitted (ERROR timed_out), does not take its
// replies for 5 s, or the server shuts down (messages already received
// are still handled first). Ending is a sequence of bounded waits driven
// by events and deadlines: replies already posted drain (1 s), after an
// ERROR the client may hang up first (250 ms), then disconnect and wait
// for CLOSED (1 s); then done().
// Grants are lazy: Bind takes none; the client's first REFILL does.
// Commits: a COMMIT is checked against the grant and queued; the worker
// hands the queued COMMITs of every session of one pass to their
// keyspace's CommitPipeline in one call (FlushQueuedCommits does the same
// for this session alone, before any non-COMMIT message is handled, so
// replies keep request order) and CompleteCommits() sends the acks. With
// --group_commit=false each COMMIT is committed on its own at once.
// Fairness: Pump handles at most `budget` completions and says whether
// more wait; the worker comes back to it after the other sessions.
// Buffers: the receive slots and send slots are one registration owned by
// the session (mapped lazily: an idle connection's untouched slots cost
// no memory); a posted receive owns its slot until its completion is
// reaped, a posted send until its completion. A reply that finds no free
// send slot waits in the outbox, and receives are not handled (nor
// reposted) meanwhile: the client is held back. Teardown order: grant
// (deregistered, then sealed or returned), connection (disconnect,
// delete), then the message buffers.
// Thread-safety: every method on the owning worker's thread (the acceptor
// before hand-over); done(), awaiting_hello() from any.
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
#include "kv/store/commit_pipeline.h"
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
  // Connections still waiting for (or refused after) their HELLO; each
  // session counts itself in while it waits.
  std::atomic<uint64_t>* pending_hellos = nullptr;
  uint16_t max_inflight = 32;
  std::chrono::milliseconds hello_timeout{2000};
  std::chrono::milliseconds idle_timeout{0};  // 0: never
  GrantQuotas* grant_quotas = nullptr;        // nullptr: no keyspace share
  uint32_t refill_rate = 20;
  uint32_t refill_burst = 8;
  std::string provider;
  bool group_commit = true;  // COMMITs of one pass share a commit point
  // A cluster node's shards (shard_table.h); nullptr: a single server.
  const ShardTable* shards = nullptr;
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;

  // Registers the message buffers. Errors: unavailable.
  static Result<std::unique_ptr<Session>> Create(const SessionEnv& env,
                                                 uint64_t id);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Uses `ks`; takes no grant (the client's first REFILL does). false
  // with *refusal (cannot fail today; kept for the callers' shape).
  // `peer_node`: a peer kvserver's session (admitted by a peer HELLO's
  // ticket): it sends replica COMMITs only, checked against the shards
  // this node receives a copy of (ShardTable::CheckPeer).
  bool Bind(OpenKeyspace* ks, Refusal* refusal, bool peer_node = false);
  // Posts every receive on the request before it is accepted, so a
  // message sent right after ESTABLISHED finds a buffer.
  Status PostReceives(rpma_conn_req* req);
  // What to accept with: ok + geometry + descriptors when bound, else
  // "hello required".
  protocol::Accept AcceptData() const;
  // The accepted connection (owned from now on).
  void Attach(rpma_conn* conn);

  // --- driven by the owning Worker, on its thread ---
  // Starts the deadlines.
  void Start();
  // The connection (a member of the worker's connection group).
  rpma_conn* conn() const { return conn_; }
  // Handles at most `budget` completions (0: all there are); *handled (if
  // given) gets how many it did. true when more may be waiting: call
  // again without waiting for the fd.
  bool Pump(size_t budget, size_t* handled = nullptr);
  void OnConnEvents();
  // Deadlines (HELLO, idle, a reply not taken, the ending's waits).
  void OnTimer(Clock::time_point now);
  // The earliest instant OnTimer has something to do; max() if none.
  Clock::time_point NextDeadline() const;
  // Server shutdown: handles what was received, then ends.
  void Shutdown();
  // The session's shard was handed to another node (a move's hand-off):
  // what was received is answered, then ERROR with status wrong_shard
  // says that nothing after it was processed (the client retries those
  // requests at the new owner), then the connection closes.
  void HandOff();

  // COMMITs checked and queued by Pump, waiting for their commit point.
  size_t queued_commits() const { return queued_.size(); }
  const store::CommitRequest& queued_commit(size_t i) const {
    return queued_[i].request;
  }
  OpenKeyspace* keyspace() const { return ks_; }
  // The results of the queued COMMITs, in order (results[0, n) with
  // n == queued_commits()): acks sent, queue emptied.
  void CompleteCommits(const Result<store::CommitResult>* results);

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Not admitted yet (a HELLO connection before its HELLO was accepted,
  // its refusal included); false once Bind succeeded. Any thread.
  bool awaiting_hello() const {
    return awaiting_hello_.load(std::memory_order_acquire);
  }
  uint64_t id() const { return id_; }

  // The owning worker's bookkeeping (the pass it was last listed in).
  uint64_t worker_pass = 0;

 private:
  enum class End {
    kNone,
    kBye,
    kPeerGone,
    kError,
    kHelloTimeout,
    kShutdown,
    kIdle,
    kHandedOff
  };
  // After End is set: replies drain, the client may hang up first (after
  // an ERROR), disconnect and wait for CLOSED, done.
  enum class Phase { kOpen, kDrainReplies, kAwaitHangup, kDisconnecting };
  static constexpr size_t kSlot = protocol::kMaxMessage;  // buffer slot size
  // op_context values: receive slot i is i + 1; send slot i is kSendBase + i.
  static constexpr uint64_t kSendBase = 1u << 20;
  static constexpr auto kReplyTimeout = std::chrono::milliseconds(5000);

  Session(const SessionEnv& env, uint64_t id);
  void HandleCompletion(const ibv_wc& wc);
  void HandleMessage(const uint8_t* data, size_t len);
  void HandleHello(const protocol::Header& h, const protocol::Hello& hello);
  void HandleCommit(const protocol::Header& h, const protocol::Commit& c);
  // Acks one COMMIT's result (stats, refusal log, grant accounting);
  // `req` is null only for a COMMIT refused before it became a request.
  void AckCommit(uint32_t request_id, const store::CommitRequest* req,
                 const Result<store::CommitResult>& r);
  // Commits this session's queued COMMITs alone, now.
  void FlushQueuedCommits();
  void HandleRefill(const protocol::Header& h, bool for_delete);
  // In a cluster: a client's request must reach the shard's owner at its
  // epoch, a peer node's the shard's incoming copy at the move's.
  Status CheckShard(uint32_t map_epoch) const;
  void HandleInfo(const protocol::Header& h, protocol::InfoTopic topic);
  // Sends ERROR and ends the session (protocol violation).
  void Fail(uint32_t request_id, StatusCode code, const std::string& why);
  // WELCOME with a refusal, then end.
  void RefuseHello(const Refusal& r);
  // Sends one message, or queues it in the outbox when no send slot is
  // free.
  void Send(protocol::Type type, uint32_t request_id, const uint8_t* payload,
            size_t len);
  // Posts message bytes from a free send slot (there is one).
  void PostSend(const uint8_t* msg, size_t n);
  // Posts the n bytes already in send slot `slot`, the back of free_send_.
  void PostSlot(size_t slot, size_t n);
  // Reaps completions without handling receives (deferred); true if a
  // send slot is free.
  bool ReapSends();
  // Posts outbox messages while send slots are free.
  void FlushOutbox();
  void RepostReceive(size_t slot);
  // Starts the ending once end_ is set (commits, grant, log line).
  void BeginEnd();
  // Moves the ending on when its wait is over.
  void AdvanceEnd(Clock::time_point now);
  // --idle_timeout_ms passed without a message: ERROR timed_out, end.
  void EndIdle();
  void NoteClosedEvents();
  void SetAwaitingHello(bool waiting);
  std::string ServerText() const;
  void EndWith(End e) {
    if (end_ == End::kNone) end_ = e;
  }

  const SessionEnv env_;
  const uint64_t id_;
  const size_t recv_slots_;
  const size_t send_slots_;
  uint8_t* buf_ = nullptr;  // recv slots, then send slots (mmap)
  size_t buf_size_ = 0;
  rpma_mr_local* mr_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_cq* cq_ = nullptr;
  OpenKeyspace* ks_ = nullptr;
  bool peer_node_ = false;  // Bind's peer_node
  std::unique_ptr<GrantHolder> grant_;
  struct QueuedCommit {
    uint32_t request_id = 0;
    store::CommitRequest request;
  };
  std::vector<QueuedCommit> queued_;
  std::vector<Result<store::CommitResult>> results_;  // FlushQueuedCommits
  std::vector<size_t> free_send_;
  std::deque<ibv_wc> deferred_;  // receives reaped while sends waited
  std::deque<std::vector<uint8_t>> outbox_;  // replies waiting for a slot
  Clock::time_point outbox_since_{};
  // Acks of this pass still to be sent after the one being posted
  // (CompleteCommits): while one follows and has a slot, a send is posted
  // with RPMA_EXT_F_MORE and the pass's acks leave together.
  size_t acks_to_follow_ = 0;
  bool hello_pending_ = false;
  bool established_ = false;
  bool closed_ = false;  // CLOSED/LOST seen
  End end_ = End::kNone;
  Phase phase_ = Phase::kOpen;
  Clock::time_point phase_deadline_{};
  std::string end_detail_;
  uint64_t commits_ = 0;
  Clock::time_point hello_deadline_{};
  Clock::time_point last_message_{};  // received
  bool counted_pending_hello_ = false;
  std::atomic<bool> awaiting_hello_{true};
  std::atomic<bool> done_{false};
};

}  // namespace kv::server

#endif  // KV_SERVER_SESSION_H_
