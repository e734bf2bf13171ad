#include "verbs/verbs_srq.h"

#include <cerrno>

#include "log_internal.h"
#include "verbs/verbs_mapping.h"

namespace rpma::prov::verbs {

VerbsSrq::~VerbsSrq() {
  int rc = ibv_destroy_srq(srq_);
  if (rc != 0) RPMA_LOG_WARNING("ibv_destroy_srq failed: %d", rc);
}

int VerbsSrq::PostRecv(const RecvWr& wr) {
  ibv_sge sge;
  ibv_recv_wr w;
  BuildRecvWr(wr, &sge, &w);
  ibv_recv_wr* bad = nullptr;
  errno = 0;
  const int rc = ibv_post_srq_recv(srq_, &w, &bad);
  return rc == 0 ? 0 : NegErrno(rc, errno);
}

}  // namespace rpma::prov::verbs
