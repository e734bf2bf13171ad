// rpma_srq_*: the shared receive queue object.

#include "srq.h"

#include <new>

#include "export.h"
#include "log_internal.h"
#include "mr.h"
#include "srq_cfg.h"

RPMA_EXPORT int rpma_srq_new(struct rpma_peer* peer, struct rpma_srq_cfg* cfg,
                             struct rpma_srq** srq_ptr) {
  if (peer == nullptr || srq_ptr == nullptr) return RPMA_E_INVAL;
  static const rpma_srq_cfg kDefault;
  const rpma_srq_cfg& c = cfg != nullptr ? *cfg : kDefault;

  std::unique_ptr<rpma_srq> srq(new (std::nothrow) rpma_srq(peer));
  if (srq == nullptr) return RPMA_E_NOMEM;
  int rc = peer->pd->CreateSrq(c.rq_size, &srq->srq);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "creating an SRQ of %u entries", c.rq_size);
  }
  if (c.rcq_size > 0) {
    rc = rpma::CqNew(peer->pd.get(), c.rcq_size, nullptr, &srq->rcq);
    if (rc != 0) return rc;
  }
  *srq_ptr = srq.release();
  return 0;
}

RPMA_EXPORT int rpma_srq_delete(struct rpma_srq** srq_ptr) {
  if (srq_ptr == nullptr) return RPMA_E_INVAL;
  delete *srq_ptr;  // provider destructors cannot fail
  *srq_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_srq_recv(struct rpma_srq* srq, struct rpma_mr_local* dst,
                              size_t offset, size_t len,
                              const void* op_context) {
  if (srq == nullptr) return RPMA_E_INVAL;
  if (dst == nullptr && (offset != 0 || len != 0)) return RPMA_E_INVAL;
  rpma::prov::RecvWr wr = rpma::MakeRecvWr(dst, offset, len, op_context);
  int rc = srq->srq->PostRecv(wr);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "posting a receive on an SRQ");
  }
  return 0;
}

RPMA_EXPORT int rpma_srq_get_rcq(const struct rpma_srq* srq,
                                 struct rpma_cq** rcq_ptr) {
  if (srq == nullptr || rcq_ptr == nullptr) return RPMA_E_INVAL;
  *rcq_ptr = srq->rcq.get();
  return 0;
}
