// The verbs provider's RC queue pair. Wraps (does not own) the ibv_qp that
// rdma_create_qp_ex() attached to a CM id; VerbsCmId owns both and destroys
// the QP with rdma_destroy_qp().
//
// Posted buffers: a posted SGE's memory belongs to the NIC until the WR's
// completion (or that of a later signaled WR, for unsignaled ones) is
// polled; inline data is copied at post time.
//
// Thread-safety: PostSend/PostRecv are safe from any thread (the vendor
// library locks the queues, including across ibv_wr_start/_complete).
#ifndef RPMA_VERBS_VERBS_QP_H_
#define RPMA_VERBS_VERBS_QP_H_

#include <infiniband/verbs.h>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsQp final : public Qp {
 public:
  // qpx: the extended QP when it was created with IBV_QP_EX_WITH_ATOMIC_WRITE
  // (native atomic write), else null.
  VerbsQp(struct ibv_qp* qp, struct ibv_qp_ex* qpx) : qp_(qp), qpx_(qpx) {}

  uint32_t qp_num() const override { return qp_->qp_num; }
  // ibv_post_send(); kAtomicWrite through ibv_wr_atomic_write() when the
  // QP has it, else -EOPNOTSUPP; kFlush -EOPNOTSUPP (rdma-core 44 has no
  // native flush; the semantic layer emulates it with an 8-byte read).
  // -ENOMEM when the send queue is full; the vendor's -errno otherwise.
  int PostSend(const SendWr& wr) override;
  // ibv_post_recv(); -ENOMEM beyond the receive queue's size.
  int PostRecv(const RecvWr& wr) override;

 private:
  int PostAtomicWrite(const SendWr& wr);

  struct ibv_qp* const qp_;
  struct ibv_qp_ex* const qpx_;
};

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_QP_H_
