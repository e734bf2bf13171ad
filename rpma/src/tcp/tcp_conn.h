// One TCP connection of the tcp provider. It owns the connection's parts
// and runs its connection-management state machine:
//   FrameReader  (frame_reader.h)  input: framing, payload placement, RNR
//   OutQueue     (out_queue.h)     output: batching, withdrawal on error
//   TcpTarget    (tcp_target.h)    the peer's requests, one per opcode
//   initiator    (tcp_conn_data.cc) posting and responses, with the pure
//                                  WR -> frame encoding of wr_frame.h
//
// Threading: every member (and the parts' state) is guarded by mu_, so
// one socket is read (and written) by one thread at a time, whichever it
// is. The engine thread runs OnEvent/OnTick/OnKick/OnCheck/OnDeferred; an
// application thread waiting on a CQ of this connection runs OnAppEvent
// (progress_group.h), and the CM and posting methods. Lock order: mu_ ->
// MrTable::mu() -> CQ/channel/SRQ mutexes -> ProgressGroup and ProgressEngine
// mutexes. mu_ is never held while waiting on the network.
//
// Who reads the socket (docs/tcp_provider.md, "Progress"): the engine,
// until an application thread serves the socket through its CQ's
// channel while established; from then on the connection is *delegated*
// and the engine only checks it (progress_engine.h) and takes it back when it
// stays unserved.
//
// Delayed acknowledgements: when an application thread's read leaves
// nothing queued but acknowledgements, and one of them answers a message
// (SEND, WRITE_IMM: the application will likely reply), they are not
// written at once but with the next frame this side writes (its reply),
// or by the engine ProgressEngine::kDeferUs later: the peer then wakes once for
// both completions instead of twice.
//
// Ordering (RC): the engine executes requests strictly in arrival order,
// synchronously (a persistent flush msyncs before the next frame is
// looked at), and answers each with exactly one RESP in the same order.
// Hence a fenced WR trivially waits for earlier reads/flushes, and a
// receive completes only after every earlier write was placed.
#ifndef RPMA_TCP_TCP_CONN_H_
#define RPMA_TCP_TCP_CONN_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "provider/provider.h"
#include "tcp/frame.h"
#include "tcp/frame_reader.h"
#include "tcp/out_queue.h"
#include "tcp/progress_engine.h"
#include "tcp/progress_group.h"
#include "tcp/socket_util.h"
#include "tcp/tcp_target.h"

namespace rpma::prov::tcp {

class CmQueue;
class ListenSocket;
class MrTable;
class TcpQp;

class TcpConn : public Handler,
                public FrameReader::Sink,
                public std::enable_shared_from_this<TcpConn> {
 public:
  enum class State {
    kIdle,         // active, resolved, nothing on the wire
    kConnecting,   // TCP connect in flight
    kHelloSent,    // waiting for HELLO_ACK
    kAwaitAccept,  // a listener has the request, waiting for ACCEPT/REJECT
    kAwaitHello,   // passive, accepted socket, waiting for the hello
    // passive, hello received, held back before delivery because the
    // peer's address caused remote access errors (access_penalty.h)
    kHeldBack,
    kRequested,  // passive, kConnectRequest delivered, app decides
    kEstablished,
    kDisconnecting,  // DISCONNECT sent, waiting for the peer's
    // Strict mode: the peer's DISCONNECT arrived and kDisconnected was
    // emitted; our reply waits for Disconnect() or the id's destruction.
    kPeerDisconnected,
    kClosed,
  };

  // `caps`: what this connection's target serves (tcp_target.h).
  TcpConn(ProgressEngine* engine, MrTable* mrs, const DeviceCaps& caps);
  ~TcpConn() override;

  // Active side, before Connect().
  void SetPeer(const SockAddr& peer, int timeout_ms);
  // Passive side (engine thread): takes ownership of an accepted socket.
  int Adopt(int fd, std::shared_ptr<ListenSocket> listener);

  // CmId operations (application threads).
  void BindId(CmId* id);
  int Migrate(std::shared_ptr<CmQueue> queue);
  void AttachQp(TcpQp* qp);
  // rpma_conn_req_set_peer: a passive connection not yet accepted checks
  // the peer's requests against `mrs` from now on (the socket stays with
  // its engine). -EINVAL: active, or already accepted.
  int MoveToTable(MrTable* mrs);
  // Nothing of the connection has reached the wire's data phase: active
  // and not connecting yet, or passive and not accepted yet.
  bool NotConnectedYet();
  // Whether the peer's requests are checked against `mrs`.
  bool UsesTable(MrTable* mrs);
  int Connect(const void* pdata, uint8_t len);
  int Accept(const void* pdata, uint8_t len);
  int Reject();
  int Disconnect();
  // ~CmId: drops queued events, tears the connection down without
  // blocking, and forgets the id and its QP.
  void DetachId();

  // Data path, initiator side (tcp_conn_data.cc).
  int PostSend(TcpQp* qp, const SendWr& wr);
  int PostRecv(TcpQp* qp, const RecvWr& wr);

  // Handler.
  void OnEvent(uint32_t events) override;
  void OnTick(int64_t now_ms) override;
  void OnKick() override;
  void OnCheck(bool first) override;
  void OnDeferred() override;

  // Application-thread progress (ProgressGroup::Progress): as OnEvent; an
  // established connection becomes delegated.
  void OnAppEvent(uint32_t events);

 private:
  static constexpr int kMaxReadsPerEvent = 16;     // fairness between conns
  static constexpr int64_t kHandshakeMs = 3000;    // passive: hello in time
  static constexpr int64_t kAcceptWaitMs = 30000;  // active: server decides
  static constexpr int64_t kDisconnectWaitMs = 1000;
  // Strict mode: an unanswered disconnect ends as an IB CM DREQ does after
  // its retries.
  static constexpr int64_t kStrictDisconnectWaitMs = 5000;
  // What a peer can make us hold (stash, queued responses) and the RNR and
  // stall timeouts: tcp/limits.h.

  // --- Connection management (tcp_conn.cc) ---
  void Emit(CmEventType type, std::vector<uint8_t> pdata = {});
  void FinishConnect();
  // Hands fd_ to the engine with interest_; on failure closes it.
  int WatchSocket();
  bool HandleCm(const FrameHeader& h);
  void OnHello();
  // Queues the kConnectRequest on the listener (or rejects if it is gone).
  void DeliverRequest();
  void OnPeerGone(bool protocol_error, const char* why);
  void ProtocolError(const char* why);
  // Queues a CM frame without payload and writes what the socket takes.
  void SendCm(uint8_t type);
  void Close();

  // --- Frame I/O (tcp_conn_io.cc) ---
  // FrameReader::Sink.
  bool Parsing() override;
  bool Alive() override { return fd_ >= 0; }
  size_t StashRoom() override;
  bool OnHeader(const FrameHeader& h) override;
  void OnPayload() override;
  void OnBadFrame(const char* why) override { ProtocolError(why); }

  void HandleEvents(uint32_t events);  // OnEvent's body, mu_ held
  void ReadInput();
  void FlushOut();  // takes MrTable::mu() when target memory is queued
  // Only delayable acknowledgements queued (see the header comment).
  bool AcksOnly() const;

  // --- Progress by application threads ---
  // fd_ and qp_ known: the channels of the QP's CQs watch fd_ too.
  void JoinGroups();
  void LeaveGroups();  // before fd_ is closed
  void Delegate();     // the engine stops watching fd_
  void TakeBack();     // the engine watches fd_ again
  // Moves the QP to error (flushing its WRs) and withdraws our unsent
  // requests, whose buffers then belong to the application again.
  void QpError();
  bool InputAllowed() const;
  // Bytes held for the peer now, and the share of the Pd's total they
  // would make (held_ is what the engine was last told).
  size_t Held() const;
  int64_t PeerTotal() const;
  void AccountHeld();
  // An RNR wait at a bound outlived Limits::rnr_retry_ms.
  void FailRnr();
  // Limits checks of a tick: RNR retry, stalled output, room again.
  void CheckLimits(int64_t now_ms);
  // RNR ends when a receive is there; true when input is to be processed
  // again (the caller does it).
  bool TryUnblock();
  void UpdateInterest();

  // --- Data path (tcp_conn_data.cc) ---
  bool HandleRequest(const FrameHeader& h);
  // Acts on what the target decided; false for RNR.
  bool OnVerdict(TcpTarget::Verdict v);
  bool HandleResp(const FrameHeader& h);
  void FinishResp();

  std::mutex mu_;
  const bool strict_;  // RPMA_TCP_STRICT=1 when the connection was made
  ProgressEngine* const engine_;
  MrTable* mrs_;  // may change once, before accept (MoveToTable)
  bool passive_ = false;
  std::string peer_ip_;  // numeric, for access_penalty.h
  State state_ = State::kIdle;
  int fd_ = -1;
  uint64_t hid_ = 0;  // engine registration
  uint32_t interest_ = 0;
  int64_t deadline_ms_ = 0;  // 0 = none
  std::string peer_name_;

  SockAddr peer_;
  int timeout_ms_ = 0;
  std::vector<uint8_t> hello_pdata_;  // ours (active) or the peer's
  std::vector<uint8_t> pdata_in_;     // HELLO / ACCEPT payload being read
  std::shared_ptr<ListenSocket> listener_;

  CmId* id_ = nullptr;
  std::shared_ptr<CmQueue> queue_;
  TcpQp* qp_ = nullptr;

  FrameReader reader_;
  OutQueue out_;
  TcpTarget target_;
  FrameHeader cur_;            // the frame being read
  bool resp_ignore_ = false;   // the current RESP's WR was flushed already
  bool mr_lock_held_ = false;  // ReadInput holds MrTable::mu() shared
  int64_t held_ = 0;           // counted in the engine's total
  int64_t rnr_since_ms_ = 0;   // the current RNR wait began
  uint64_t out_seen_ = 0;      // out_.bytes_written() at out_since_ms_
  int64_t out_since_ms_ = 0;   // output last empty or progressing

  struct GroupEntry {
    std::shared_ptr<ProgressGroup> group;
    uint64_t key = 0;
  };
  GroupEntry groups_[2];        // send CQ's, receive CQ's (if another)
  bool joined_ = false;         // groups_ hold fd_
  bool delegated_ = false;      // the engine does not watch fd_
  bool app_thread_ = false;     // inside OnAppEvent
  bool ack_deferred_ = false;   // acks queued, ProgressEngine::DeferFlush asked
  uint64_t app_reads_ = 0;      // OnAppEvent calls
  uint64_t checked_reads_ = 0;  // app_reads_ at the last OnCheck
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CONN_H_
