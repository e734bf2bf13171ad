// One TCP connection of the tcp provider: connection management state
// machine, the frame reader/writer, and the target-side execution of the
// peer's requests (the "NIC" part).
//
// Threading: every member is guarded by mu_. The engine thread runs
// OnEvent/OnTick/OnKick; application threads call the CM and posting
// methods. Lock order: mu_ -> MrTable::mu() -> CQ/channel/SRQ mutexes ->
// Engine's map mutex. mu_ is never held while waiting on the network.
//
// Ordering (RC): the engine executes requests strictly in arrival order,
// synchronously (a persistent flush msyncs before the next frame is
// looked at), and answers each with exactly one RESP in the same order.
// Hence a fenced WR trivially waits for earlier reads/flushes, and a
// receive completes only after every earlier write was placed.
#ifndef RPMA_TCP_TCP_CONN_H_
#define RPMA_TCP_TCP_CONN_H_

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "provider/provider.h"
#include "tcp/engine.h"
#include "tcp/frame.h"
#include "tcp/socket_util.h"

namespace rpma::prov::tcp {

class CmQueue;
class ListenSocket;
class MrTable;
struct MrEntry;
class TcpQp;

class TcpConn : public Handler, public std::enable_shared_from_this<TcpConn> {
 public:
  enum class State {
    kIdle,         // active, resolved, nothing on the wire
    kConnecting,   // TCP connect in flight
    kHelloSent,    // waiting for HELLO_ACK
    kAwaitAccept,  // a listener has the request, waiting for ACCEPT/REJECT
    kAwaitHello,   // passive, accepted socket, waiting for the hello
    kRequested,    // passive, kConnectRequest delivered, app decides
    kEstablished,
    kDisconnecting,  // DISCONNECT sent, waiting for the peer's
    kClosed,
  };

  TcpConn(Engine* engine, MrTable* mrs);
  ~TcpConn() override;

  // Active side, before Connect().
  void SetPeer(const SockAddr& peer, int timeout_ms);
  // Passive side (engine thread): takes ownership of an accepted socket.
  int Adopt(int fd, std::shared_ptr<ListenSocket> listener);

  // CmId operations (application threads).
  void BindId(CmId* id);
  int Migrate(std::shared_ptr<CmQueue> queue);
  void AttachQp(TcpQp* qp);
  int Connect(const void* pdata, uint8_t len);
  int Accept(const void* pdata, uint8_t len);
  int Reject();
  int Disconnect();
  // ~CmId: drops queued events, tears the connection down without
  // blocking, and forgets the id and its QP.
  void DetachId();

  // Data path (tcp_conn_data.cc).
  int PostSend(TcpQp* qp, const SendWr& wr);
  int PostRecv(TcpQp* qp, const RecvWr& wr);

  // Handler.
  void OnEvent(uint32_t events) override;
  void OnTick(int64_t now_ms) override;
  void OnKick() override;

 private:
  // One frame in the output queue. The payload is sent from `payload`
  // directly: the initiator's posted sge (owned by the provider until
  // completion), `own`, or the target's registered memory `mr` (a READ
  // response; sent only under MrTable::mu() after checking the region is
  // still registered, never copied).
  struct OutFrame {
    uint8_t hdr[kHeaderSize];
    const uint8_t* payload = nullptr;
    size_t payload_len = 0;
    size_t sent = 0;
    std::shared_ptr<MrEntry> mr;
    std::vector<uint8_t> own;
    bool request = false;  // counts in out_requests_
    bool zero = false;     // withdrawn: the unsent payload goes as zeros
  };

  static constexpr size_t kInBufSize = 64 * 1024;
  // Payload remainders at least this long are read straight into their
  // destination (registered memory or a posted receive), not via in_.
  static constexpr size_t kDirectMin = 4096;
  static constexpr int kMaxReadsPerEvent = 16;     // fairness between conns
  static constexpr int64_t kHandshakeMs = 3000;    // passive: hello in time
  static constexpr int64_t kAcceptWaitMs = 30000;  // active: server decides
  static constexpr int64_t kDisconnectWaitMs = 1000;
  // Stop reading requests while this many frames wait to be sent: a peer
  // that floods requests without reading responses cannot grow our memory.
  // Honest peers stay far below (bounded by their send queue size); the
  // bound is in frames, not bytes, so two peers reading large ranges from
  // each other never both stop reading.
  static constexpr size_t kMaxOutFrames = 65536;
  // While a SEND waits for a receive (RNR), later requests are kept (with
  // their payloads) up to this many bytes so that the peer's responses
  // behind them still flow; beyond it, reading stops until the receive.
  static constexpr size_t kMaxStash = 64u << 20;

  // --- Connection management (tcp_conn.cc) ---
  void Emit(CmEventType type, std::vector<uint8_t> pdata = {});
  void FinishConnect();
  // Hands fd_ to the engine with interest_; on failure closes it.
  int WatchSocket();
  bool HandleCm(const FrameHeader& h);
  void OnHello();
  void OnPeerGone(bool protocol_error, const char* why);
  void ProtocolError(const char* why);
  void Close();

  // --- Frame I/O (tcp_conn_io.cc) ---
  void ReadInput();
  void Process();
  bool HandleHeader(const FrameHeader& h);  // false: blocked (RNR)
  void FinishPayload();
  void Queue(const FrameHeader& h, const void* payload, size_t len,
             std::shared_ptr<MrEntry> mr = nullptr);
  void QueueOwned(const FrameHeader& h, const void* payload, size_t len);
  void FlushOut();  // takes MrTable::mu() when target memory is queued
  // Moves the QP to error (flushing its WRs) and withdraws our unsent
  // requests, whose buffers then belong to the application again.
  void QpError();
  void FlushOutLocked();
  bool InputAllowed() const;
  bool HasRecv() const;
  bool TryUnblock();
  void UpdateInterest();
  void ExpectPayload(uint8_t* dst, size_t len);

  // --- Data path (tcp_conn_data.cc) ---
  bool HandleRequest(const FrameHeader& h);
  void FinishRequest();
  bool HandleResp(const FrameHeader& h);
  void FinishResp();
  void Respond(uint64_t status, const void* payload = nullptr, size_t len = 0,
               std::shared_ptr<MrEntry> mr = nullptr);
  void TargetError(uint64_t status);
  bool TakeRecvOrWait(RecvWr* out);
  uint64_t ExecuteFlush(const FrameHeader& h);

  std::mutex mu_;
  Engine* const engine_;
  MrTable* const mrs_;
  State state_ = State::kIdle;
  int fd_ = -1;
  uint64_t hid_ = 0;  // engine registration
  uint32_t interest_ = 0;
  int64_t deadline_ms_ = 0;  // 0 = none
  std::string peer_name_;

  SockAddr peer_;
  int timeout_ms_ = 0;
  std::vector<uint8_t> hello_pdata_;  // ours (active) or the peer's
  std::shared_ptr<ListenSocket> listener_;

  CmId* id_ = nullptr;
  std::shared_ptr<CmQueue> queue_;
  TcpQp* qp_ = nullptr;

  // Input.
  std::vector<uint8_t> in_;
  size_t in_start_ = 0, in_end_ = 0;
  bool in_payload_ = false;
  FrameHeader cur_;
  uint8_t* dst_ = nullptr;  // payload destination; null = discard
  size_t remaining_ = 0;
  std::shared_ptr<MrEntry> dst_mr_;  // set when dst_ is target memory
  uint64_t cur_status_ = kRespOk;
  RecvWr cur_recv_;
  bool have_recv_ = false;
  bool ignore_cur_ = false;     // the current frame is parsed but not executed
  bool rnr_blocked_ = false;    // a request waits for a receive (RNR)
  std::vector<uint8_t> stash_;  // RNR: the blocked and later requests
  size_t stash_payload_ = 0;    // payload bytes still to be stashed
  bool target_error_ = false;   // our QP failed as a target: ignore requests
  std::vector<uint8_t> pdata_in_;
  std::vector<uint8_t> discard_;

  // Output.
  std::deque<OutFrame> out_;
  size_t out_target_ = 0;      // frames of out_ with `mr` set
  bool mr_lock_held_ = false;  // ReadInput holds MrTable::mu() shared
  bool broken_ = false;        // send side failed; the reader sees the end
  size_t out_requests_ = 0;    // our requests still (partly) in out_
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CONN_H_
