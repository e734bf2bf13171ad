// The verbs provider's shared receive queue (ibv_srq). Owns the ibv_srq;
// destroyed after every QP using it (provider.h). PostRecv is thread-safe
// (libibverbs' own locking).
#ifndef RPMA_VERBS_VERBS_SRQ_H_
#define RPMA_VERBS_VERBS_SRQ_H_

#include <infiniband/verbs.h>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsSrq final : public Srq {
 public:
  explicit VerbsSrq(struct ibv_srq* srq) : srq_(srq) {}
  ~VerbsSrq() override;

  struct ibv_srq* srq() const {
    return srq_;
  }
  // ibv_post_srq_recv(); -ENOMEM when full. The buffer belongs to the NIC
  // until its completion is polled.
  int PostRecv(const RecvWr& wr) override;

 private:
  struct ibv_srq* const srq_;
};

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_SRQ_H_
