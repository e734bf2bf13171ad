// Queue pair bookkeeping; see tcp_qp.h.
#include "tcp/tcp_qp.h"

#include <cstring>

#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {

enum ibv_wc_opcode WcOpcode(Opcode op) {
  switch (op) {
    case Opcode::kRead:
    case Opcode::kFlush:
      return IBV_WC_RDMA_READ;
    case Opcode::kWrite:
    case Opcode::kWriteWithImm:
    case Opcode::kAtomicWrite:
      return IBV_WC_RDMA_WRITE;
    case Opcode::kSend:
    case Opcode::kSendWithImm:
      return IBV_WC_SEND;
  }
  return IBV_WC_SEND;
}

TcpQp::TcpQp(std::shared_ptr<TcpConn> conn, const QpInit& init, uint32_t num)
    : send_cq_(static_cast<TcpCq*>(init.send_cq)),
      recv_cq_(static_cast<TcpCq*>(init.recv_cq)),
      srq_(static_cast<TcpSrq*>(init.srq)),
      sq_size_(init.sq_size),
      rq_size_(init.rq_size),
      conn_(std::move(conn)),
      num_(num) {}

int TcpQp::PostSend(const SendWr& wr) { return conn_->PostSend(this, wr); }

int TcpQp::PostRecv(const RecvWr& wr) { return conn_->PostRecv(this, wr); }

void TcpQp::CompleteFront(enum ibv_wc_status status) {
  PendingWr p = pending_.front();
  pending_.pop_front();
  if (p.opcode == Opcode::kSend || p.opcode == Opcode::kSendWithImm ||
      p.opcode == Opcode::kWriteWithImm) {
    --two_sided_;
  }
  if (status == IBV_WC_SUCCESS && !p.signaled) {
    ++unsignaled_done_;
    return;
  }
  if (p.signaled) unsignaled_done_ = 0;
  struct ibv_wc wc;
  std::memset(&wc, 0, sizeof(wc));
  wc.wr_id = p.wr_id;
  wc.status = status;
  wc.opcode = WcOpcode(p.opcode);
  wc.qp_num = num_;
  if (p.opcode == Opcode::kRead && status == IBV_WC_SUCCESS) {
    wc.byte_len = p.length;
  }
  send_cq_->Push(wc);
}

void TcpQp::EnterError() {
  if (error_) return;
  error_ = true;
  while (!pending_.empty()) CompleteFront(IBV_WC_WR_FLUSH_ERR);
  unsignaled_done_ = 0;
  while (!rq_.empty()) {
    FlushOne(rq_.front().wr_id, true);
    rq_.pop_front();
  }
}

void TcpQp::FlushOne(uint64_t wr_id, bool is_recv) {
  struct ibv_wc wc;
  std::memset(&wc, 0, sizeof(wc));
  wc.wr_id = wr_id;
  wc.status = IBV_WC_WR_FLUSH_ERR;
  wc.opcode = is_recv ? IBV_WC_RECV : IBV_WC_SEND;
  wc.qp_num = num_;
  (is_recv ? recv_cq_ : send_cq_)->Push(wc);
}

void TcpQp::PushRecvCompletion(const struct ibv_wc& wc) { recv_cq_->Push(wc); }

}  // namespace rpma::prov::tcp
