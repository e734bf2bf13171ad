// Queue pair of the tcp provider: the verbs-visible half of a connection.
// It holds the RC bookkeeping (outstanding send WRs, posted receives,
// error state); the wire half lives in TcpConn. Every method below
// qp_num(), PostSend() and PostRecv() is called with the owning
// connection's mutex held (that mutex guards all state here).
//
// Buffer ownership: the sge of a posted send WR (unless inline) and the
// buffer of a posted receive belong to the provider until the WR's
// completion is polled (or, for an unsignaled WR, until a later signaled
// WR completes): the payload is sent from / received into them directly.
#ifndef RPMA_TCP_TCP_QP_H_
#define RPMA_TCP_TCP_QP_H_

#include <deque>
#include <memory>

#include "provider/provider.h"

namespace rpma::prov::tcp {

class TcpConn;
class TcpCq;
class TcpSrq;

// A send WR on the wire, waiting for its response.
struct PendingWr {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kSend;
  bool signaled = false;
  uint8_t* read_dst = nullptr;  // kRead: where the response data goes
  uint32_t length = 0;
};

class TcpQp : public Qp {
 public:
  TcpQp(std::shared_ptr<TcpConn> conn, const QpInit& init, uint32_t num);
  uint32_t qp_num() const override { return num_; }
  // Process-unique for the process's lifetime (64 bits, never reused,
  // never 0; qp_num wraps at 24 bits): the owner identity of regions
  // registered for this QP (TcpPd::RegMrForQp).
  uint64_t serial() const { return serial_; }
  TcpConn* conn() const { return conn_.get(); }
  // Immutable, so readable without the connection's mutex.
  bool has_srq_unlocked() const { return srq_ != nullptr; }
  TcpCq* send_cq() const { return send_cq_; }
  TcpCq* recv_cq() const { return recv_cq_; }
  int PostSend(const SendWr& wr) override;
  int PostRecv(const RecvWr& wr) override;

  // --- Guarded by the connection's mutex ---------------------------------
  bool error() const { return error_; }
  bool has_srq() const { return srq_ != nullptr; }

  // Send side. True when no send-queue slot is free (RC: unsignaled WRs
  // keep theirs until a later signaled WR completes).
  bool SqFull() const { return SlotsUsed() >= sq_size_; }
  // Records a WR whose request is now queued for the wire.
  void AddPending(const PendingWr& p);
  size_t pending() const { return pending_.size(); }
  const PendingWr& front() const { return pending_.front(); }
  // SEND / WRITE_IMM among the pending WRs (their responses may wait for
  // a receive the peer posts only later).
  bool two_sided_pending() const { return two_sided_ > 0; }
  // Completes the oldest pending WR with `status` (errors always complete).
  void CompleteFront(enum ibv_wc_status status);

  // Receive side. AddRecv: -ENOMEM when the RQ is full. HasRecv/TakeRecv
  // look at the SRQ when the QP has one, else at its own RQ.
  int AddRecv(const RecvWr& wr);
  bool HasRecv() const;
  bool TakeRecv(RecvWr* out);
  void PushRecvCompletion(const struct ibv_wc& wc);

  // Moves the QP to error: every pending WR and every receive posted to its
  // own RQ completes with IBV_WC_WR_FLUSH_ERR.
  void EnterError();
  // IBV_WC_WR_FLUSH_ERR completions of single WRs (posted while in error,
  // or a receive taken but not filled).
  void FlushSend(uint64_t wr_id, Opcode op);
  void FlushRecv(uint64_t wr_id);

 private:
  size_t SlotsUsed() const { return pending_.size() + unsignaled_done_; }

  TcpCq* const send_cq_;
  TcpCq* const recv_cq_;
  TcpSrq* const srq_;
  const uint32_t sq_size_;
  const uint32_t rq_size_;
  std::deque<PendingWr> pending_;
  size_t unsignaled_done_ = 0;
  size_t two_sided_ = 0;
  std::deque<RecvWr> rq_;
  bool error_ = false;
  std::shared_ptr<TcpConn> conn_;
  const uint32_t num_;
  const uint64_t serial_;
};

// Completion opcode reported for a send opcode (see provider.h).
enum ibv_wc_opcode WcOpcode(Opcode op);

// True for the opcodes that consume a receive at the target.
bool TwoSided(Opcode op);

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_QP_H_
