// rpkv extensions beyond librpma (include/rpma_ext.h): moving a request
// into another peer's protection domain, per-connection registrations and
// the remote floor of a registration.

#include <cerrno>
#include <memory>
#include <new>

#include "conn.h"
#include "conn_req.h"
#include "export.h"
#include "ext_errors.h"
#include "log_internal.h"
#include "mr.h"
#include "peer.h"
#include "rpma_ext.h"

namespace rpma {

// -EOPNOTSUPP from the provider is the documented RPMA_E_NOSUPP.
int ExtFailed(int rc, const char* what) {
  if (rc == -EOPNOTSUPP) {
    RPMA_LOG_INFO("%s: not supported by this provider", what);
    return RPMA_E_NOSUPP;
  }
  if (rc == -EINVAL) return RPMA_E_INVAL;
  return RPMA_PROVIDER_FAILED_NOMEM(rc, "%s", what);
}

int QpRecreateFailed(int rc, const char* what) {
  if (rc == -EIO) {
    RPMA_LOG_ERROR(
        "the request lost its queue pair; delete it (the client is "
        "rejected)");
    return RPMA_E_PROVIDER;
  }
  return ExtFailed(rc, what);
}

}  // namespace rpma

using rpma::ExtFailed;

RPMA_EXPORT int rpma_conn_req_set_peer(struct rpma_conn_req* req,
                                       struct rpma_peer* peer) {
  if (req == nullptr || peer == nullptr) return RPMA_E_INVAL;
  if (!req->passive || req->id == nullptr || req->id->qp() == nullptr) {
    RPMA_LOG_ERROR("only an incoming connection request can change its peer");
    return RPMA_E_INVAL;
  }
  if (peer->device != req->peer->device) {
    RPMA_LOG_ERROR("the new peer is of another device than the request");
    return RPMA_E_INVAL;
  }
  if (req->uses_srq) {
    RPMA_LOG_ERROR("a request with a shared RQ cannot change its peer");
    return RPMA_E_INVAL;
  }
  if (req->recv_posted) {
    RPMA_LOG_ERROR("receives were posted to the request; it cannot move");
    return RPMA_E_INVAL;
  }
  if (peer == req->peer.get()) return 0;
  std::unique_ptr<rpma::PeerRef> origin;
  if (req->origin_peer == nullptr) {
    origin.reset(new (std::nothrow) rpma::PeerRef(req->peer.get()));
    if (origin == nullptr) return RPMA_E_NOMEM;
  }
  int rc = req->id->MoveQp(peer->pd.get());
  if (rc != 0) {
    return rpma::QpRecreateFailed(
        rc, "moving a queue pair to another protection domain");
  }
  if (origin != nullptr) req->origin_peer = std::move(origin);
  req->peer.Rebind(peer);
  return 0;
}

RPMA_EXPORT int rpma_conn_mr_reg(struct rpma_conn* conn, void* ptr, size_t size,
                                 int usage, struct rpma_mr_local** mr_ptr) {
  if (conn == nullptr || ptr == nullptr || size == 0 || mr_ptr == nullptr)
    return RPMA_E_INVAL;
  if (usage == 0 || (usage & ~rpma::kMrUsageAll) != 0) return RPMA_E_INVAL;
  if (conn->id == nullptr || conn->id->qp() == nullptr) return RPMA_E_INVAL;
  rpma_peer* peer = conn->peer.get();
  auto* mr = new (std::nothrow) rpma_mr_local(peer);
  if (mr == nullptr) return RPMA_E_NOMEM;
  int rc = peer->pd->RegMrForQp(conn->id->qp(), ptr, size,
                                rpma::UsageToAccess(peer, usage), &mr->mr);
  if (rc != 0) {
    delete mr;
    return ExtFailed(rc, "registering memory for one connection");
  }
  mr->usage = usage;
  *mr_ptr = mr;
  return 0;
}

RPMA_EXPORT int rpma_mr_advance(struct rpma_mr_local* mr, size_t offset) {
  if (mr == nullptr || mr->mr == nullptr) return RPMA_E_INVAL;
  if (offset > mr->mr->length()) return RPMA_E_INVAL;
  int rc = mr->mr->RaiseRemoteFloor(offset);
  if (rc != 0) return ExtFailed(rc, "raising a region's remote floor");
  return 0;
}
