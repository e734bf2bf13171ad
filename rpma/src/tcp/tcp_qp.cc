// Queue pair bookkeeping; see tcp_qp.h.
#include "tcp/tcp_qp.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_srq.h"

namespace rpma::prov::tcp {
namespace {

struct ibv_wc Wc(uint64_t wr_id, enum ibv_wc_status status,
                 enum ibv_wc_opcode opcode, uint32_t qp_num) {
  struct ibv_wc wc;
  std::memset(&wc, 0, sizeof(wc));
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.qp_num = qp_num;
  return wc;
}

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

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

bool TwoSided(Opcode op) {
  return op == Opcode::kSend || op == Opcode::kSendWithImm ||
         op == Opcode::kWriteWithImm;
}

TcpQp::TcpQp(std::shared_ptr<TcpConn> conn, const QpInit& init, uint32_t num)
    : send_cq_(static_cast<TcpCq*>(init.send_cq)),
      recv_cq_(static_cast<TcpCq*>(init.recv_cq)),
      srq_(static_cast<TcpSrq*>(init.srq)),
      sq_size_(init.sq_size),
      rq_size_(init.rq_size),
      conn_(std::move(conn)),
      num_(num),
      serial_(NextSerial()) {}

int TcpQp::PostSend(const SendWr& wr) { return conn_->PostSend(this, wr); }

int TcpQp::PostRecv(const RecvWr& wr) { return conn_->PostRecv(this, wr); }

void TcpQp::AddPending(const PendingWr& p) {
  pending_.push_back(p);
  if (TwoSided(p.opcode)) ++two_sided_;
}

void TcpQp::CompleteFront(enum ibv_wc_status status) {
  PendingWr p = pending_.front();
  pending_.pop_front();
  if (TwoSided(p.opcode)) --two_sided_;
  if (status == IBV_WC_SUCCESS && !p.signaled) {
    ++unsignaled_done_;
    return;
  }
  if (p.signaled) unsignaled_done_ = 0;
  struct ibv_wc wc = Wc(p.wr_id, status, WcOpcode(p.opcode), num_);
  if (p.opcode == Opcode::kRead && status == IBV_WC_SUCCESS) {
    wc.byte_len = p.length;
  }
  send_cq_->Push(wc);
}

int TcpQp::AddRecv(const RecvWr& wr) {
  if (rq_.size() >= rq_size_) return -ENOMEM;
  rq_.push_back(wr);
  return 0;
}

bool TcpQp::HasRecv() const {
  if (srq_ != nullptr) return srq_->HasAny();
  return !rq_.empty();
}

bool TcpQp::TakeRecv(RecvWr* out) {
  if (srq_ != nullptr) return srq_->Take(out);
  if (rq_.empty()) return false;
  *out = rq_.front();
  rq_.pop_front();
  return true;
}

void TcpQp::PushRecvCompletion(const struct ibv_wc& wc) { recv_cq_->Push(wc); }

void TcpQp::EnterError() {
  if (error_) return;
  error_ = true;
  while (!pending_.empty()) CompleteFront(IBV_WC_WR_FLUSH_ERR);
  unsignaled_done_ = 0;
  while (!rq_.empty()) {
    FlushRecv(rq_.front().wr_id);
    rq_.pop_front();
  }
}

void TcpQp::FlushSend(uint64_t wr_id, Opcode op) {
  send_cq_->Push(Wc(wr_id, IBV_WC_WR_FLUSH_ERR, WcOpcode(op), num_));
}

void TcpQp::FlushRecv(uint64_t wr_id) {
  recv_cq_->Push(Wc(wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, num_));
}

}  // namespace rpma::prov::tcp
