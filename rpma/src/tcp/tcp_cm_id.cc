// CmId of the tcp provider; see tcp_cm_id.h.
#include "tcp/tcp_cm_id.h"

#include <atomic>
#include <cerrno>

#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_qp.h"

namespace rpma::prov::tcp {
namespace {
// QP numbers are process-unique (24 bits as on verbs, never 0).
uint32_t NextQpNum() {
  static std::atomic<uint32_t> next{0x100};
  uint32_t n = next.fetch_add(1) & 0xffffffu;
  return n == 0 ? NextQpNum() : n;
}
}  // namespace

TcpCmId::TcpCmId(std::shared_ptr<TcpConn> conn) : conn_(std::move(conn)) {}

TcpCmId::~TcpCmId() {
  if (conn_ != nullptr) conn_->DetachId();  // QP unreachable from here on
  qp_.reset();
}

int TcpCmId::CreateQp(const QpInit& init) {
  if (qp_ != nullptr || conn_ == nullptr) return -EINVAL;
  if (init.send_cq == nullptr || init.recv_cq == nullptr) return -EINVAL;
  // Zero-sized queues are legal (as in verbs): posting to them fails.
  qp_ = std::make_unique<TcpQp>(conn_, init, NextQpNum());
  conn_->AttachQp(qp_.get());
  return 0;
}

Qp* TcpCmId::qp() const { return qp_.get(); }

int TcpCmId::Migrate(CmChannel* channel) {
  if (channel == nullptr || conn_ == nullptr) return -EINVAL;
  return conn_->Migrate(static_cast<TcpCmChannel*>(channel)->queue());
}

int TcpCmId::Connect(const void* pdata, uint8_t len) {
  return conn_ ? conn_->Connect(pdata, len) : -EINVAL;
}

int TcpCmId::Accept(const void* pdata, uint8_t len) {
  return conn_ ? conn_->Accept(pdata, len) : -EINVAL;
}

int TcpCmId::Reject() { return conn_ ? conn_->Reject() : -EINVAL; }

int TcpCmId::Disconnect() { return conn_ ? conn_->Disconnect() : -EINVAL; }

}  // namespace rpma::prov::tcp
