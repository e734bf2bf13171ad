// struct rpma_srq: a shared receive queue and its optional receive CQ.
#ifndef RPMA_SRQ_H_
#define RPMA_SRQ_H_

#include <memory>

#include "cq.h"
#include "peer.h"

struct rpma_srq {
  explicit rpma_srq(rpma_peer* p) : peer(p) {}
  rpma::PeerRef peer;  // first: released last
  std::unique_ptr<rpma::prov::Srq> srq;
  // Receives of every connection using the SRQ land here when not null
  // (librpma destroys it before the SRQ: declared after, destroyed first).
  std::unique_ptr<rpma_cq> rcq;
};

#endif  // RPMA_SRQ_H_
