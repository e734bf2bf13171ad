#include "verbs/verbs_qp.h"

#include <cerrno>

#include "verbs/verbs_mapping.h"

namespace rpma::prov::verbs {

int VerbsQp::PostSend(const SendWr& wr) {
  if (wr.opcode == Opcode::kAtomicWrite) return PostAtomicWrite(wr);
  ibv_sge sge;
  ibv_send_wr w;
  int rc = BuildSendWr(wr, &sge, &w);
  if (rc != 0) return rc;
  ibv_send_wr* bad = nullptr;
  errno = 0;
  rc = ibv_post_send(qp_, &w, &bad);
  return rc == 0 ? 0 : NegErrno(rc, errno);
}

int VerbsQp::PostAtomicWrite(const SendWr& wr) {
#if !RPMA_HAVE_IBV_ATOMIC_WRITE
  (void)wr;
  (void)qpx_;  // never set: no extended QP without native atomic write
  return -EOPNOTSUPP;
#else
  if (qpx_ == nullptr) return -EOPNOTSUPP;
  // The 8 bytes travel in the WR itself, so INLINE has no meaning here.
  ibv_wr_start(qpx_);
  qpx_->wr_id = wr.wr_id;
  qpx_->wr_flags = SendFlags(wr) & ~static_cast<unsigned>(IBV_SEND_INLINE);
  ibv_wr_atomic_write(qpx_, wr.rkey, wr.remote_addr, wr.atomic_data);
  errno = 0;
  const int rc = ibv_wr_complete(qpx_);
  return rc == 0 ? 0 : NegErrno(rc, errno);
#endif
}

int VerbsQp::PostRecv(const RecvWr& wr) {
  ibv_sge sge;
  ibv_recv_wr w;
  BuildRecvWr(wr, &sge, &w);
  ibv_recv_wr* bad = nullptr;
  errno = 0;
  const int rc = ibv_post_recv(qp_, &w, &bad);
  return rc == 0 ? 0 : NegErrno(rc, errno);
}

}  // namespace rpma::prov::verbs
