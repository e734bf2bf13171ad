// CmId of the tcp provider; see tcp_cm_id.h.
#include "tcp/tcp_cm_id.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "tcp/tcp_cm_channel.h"
#include "tcp/tcp_conn.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_device.h"
#include "tcp/tcp_pd.h"
#include "tcp/tcp_qp.h"
#include "tcp/tcp_srq.h"

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
  if (dynamic_cast<TcpCq*>(init.send_cq) == nullptr ||
      dynamic_cast<TcpCq*>(init.recv_cq) == nullptr ||
      (init.srq != nullptr && dynamic_cast<TcpSrq*>(init.srq) == nullptr))
    return -EINVAL;  // missing, or another provider's
  // Zero-sized queues are legal (as in verbs): posting to them fails.
  qp_ = std::make_unique<TcpQp>(conn_, init, NextQpNum());
  conn_->AttachQp(qp_.get());
  return 0;
}

Qp* TcpCmId::qp() const { return qp_.get(); }

int TcpCmId::MoveQp(Pd* pd) {
  auto* tpd = dynamic_cast<TcpPd*>(pd);
  if (tpd == nullptr || qp_ == nullptr || conn_ == nullptr ||
      qp_->has_srq_unlocked())
    return -EINVAL;
  return conn_->MoveToTable(tpd->mrs());
}

int TcpCmId::ReplaceQp(const QpInit& init) {
  if (qp_ == nullptr || conn_ == nullptr || !conn_->NotConnectedYet())
    return -EINVAL;
  if (dynamic_cast<TcpCq*>(init.send_cq) == nullptr ||
      dynamic_cast<TcpCq*>(init.recv_cq) == nullptr ||
      (init.srq != nullptr && dynamic_cast<TcpSrq*>(init.srq) == nullptr))
    return -EINVAL;
  auto next = std::make_unique<TcpQp>(conn_, init, NextQpNum());
  conn_->AttachQp(next.get());
  qp_ = std::move(next);  // the old QP: no longer the connection's
  return 0;
}

int TcpCmId::Migrate(CmChannel* channel) {
  auto* ch = dynamic_cast<TcpCmChannel*>(channel);
  if (ch == nullptr || conn_ == nullptr) return -EINVAL;  // not a tcp one
  return conn_->Migrate(ch->queue());
}

namespace {
// A NIC's CM refuses private data beyond the field (rdma_connect /
// rdma_accept fail with EINVAL) and, on IB/RoCE, always carries the whole
// field: strict mode delivers it zero-padded, as the peer would see it.
template <typename Send>
int WithPrivateData(const void* pdata, uint8_t len, uint8_t max, Send send) {
  if (len > max || (len > 0 && pdata == nullptr)) return -EINVAL;
  if (!StrictMode()) return send(pdata, len);
  uint8_t field[256] = {};
  if (len > 0) std::memcpy(field, pdata, len);
  return send(field, max);
}
}  // namespace

int TcpCmId::Connect(const void* pdata, uint8_t len) {
  if (conn_ == nullptr) return -EINVAL;
  return WithPrivateData(
      pdata, len, kMaxConnectPrivateData,
      [this](const void* p, uint8_t l) { return conn_->Connect(p, l); });
}

int TcpCmId::Accept(const void* pdata, uint8_t len) {
  if (conn_ == nullptr) return -EINVAL;
  return WithPrivateData(
      pdata, len, kMaxAcceptPrivateData,
      [this](const void* p, uint8_t l) { return conn_->Accept(p, l); });
}

int TcpCmId::Reject() { return conn_ ? conn_->Reject() : -EINVAL; }

int TcpCmId::Disconnect() { return conn_ ? conn_->Disconnect() : -EINVAL; }

}  // namespace rpma::prov::tcp
