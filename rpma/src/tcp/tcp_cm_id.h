// CmId of the tcp provider: the application's handle on one TcpConn. It
// owns the QP; destroying it drops its queued events and tears the
// connection down without blocking (the peer sees kDisconnected, or
// kRejected if the request was never accepted).
#ifndef RPMA_TCP_TCP_CM_ID_H_
#define RPMA_TCP_TCP_CM_ID_H_

#include <memory>

#include "provider/provider.h"

namespace rpma::prov::tcp {

class TcpConn;
class TcpQp;

class TcpCmId : public CmId {
 public:
  explicit TcpCmId(std::shared_ptr<TcpConn> conn);
  ~TcpCmId() override;

  int CreateQp(const QpInit& init) override;
  Qp* qp() const override;
  // The QP stays (tcp QPs belong to no Pd); the connection's target is
  // switched to `pd`'s registrations (TcpConn::MoveToTable).
  int MoveQp(Pd* pd) override;
  // A new TcpQp on init's CQs; the connection switches to it (and to the
  // new CQs' progress groups) before the old one is destroyed.
  int ReplaceQp(const QpInit& init) override;
  int Migrate(CmChannel* channel) override;
  int Connect(const void* pdata, uint8_t len) override;
  int Accept(const void* pdata, uint8_t len) override;
  int Reject() override;
  int Disconnect() override;

  // Forgets the connection without calling back into it (used by the
  // connection itself, under its lock, for an id it never handed out).
  void Orphan() { conn_.reset(); }

 private:
  std::shared_ptr<TcpConn> conn_;
  std::unique_ptr<TcpQp> qp_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_CM_ID_H_
