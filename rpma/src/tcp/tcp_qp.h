// Queue pair of the tcp provider: the verbs-visible half of a connection.
// It holds the RC bookkeeping (outstanding send WRs, posted receives,
// error state); the wire half lives in TcpConn. All state is guarded by
// the owning connection's mutex.
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
  int PostSend(const SendWr& wr) override;
  int PostRecv(const RecvWr& wr) override;

  // --- Guarded by the connection's mutex ---------------------------------
  // Occupied send-queue slots (RC: unsignaled WRs keep theirs until a
  // later signaled WR completes).
  size_t SlotsUsed() const { return pending_.size() + unsignaled_done_; }
  // Completes the oldest pending WR with `status` (errors always complete).
  void CompleteFront(enum ibv_wc_status status);
  // Moves the QP to error: every pending WR and every receive posted to its
  // own RQ completes with IBV_WC_WR_FLUSH_ERR.
  void EnterError();
  // Completion for a WR posted while in error.
  void FlushOne(uint64_t wr_id, bool is_recv);
  void PushRecvCompletion(const struct ibv_wc& wc);

  TcpCq* send_cq_;
  TcpCq* recv_cq_;
  TcpSrq* srq_;
  const uint32_t sq_size_;
  const uint32_t rq_size_;
  std::deque<PendingWr> pending_;
  size_t unsignaled_done_ = 0;
  size_t two_sided_ = 0;  // SEND/WRITE_IMM among pending_
  std::deque<RecvWr> rq_;
  bool error_ = false;

 private:
  std::shared_ptr<TcpConn> conn_;
  const uint32_t num_;
};

// Completion opcode reported for a send opcode (see provider.h).
enum ibv_wc_opcode WcOpcode(Opcode op);

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_QP_H_
