// rpma_conn_req_*: creating, connecting/accepting and dropping requests.
//
// Consumption rules (librpma's implementation, issue #3): connect with a
// NULL req_ptr/*req_ptr consumes nothing; every other call consumes the
// request, which on the passive side means rejecting it when it is not
// accepted. *conn_ptr is written only on success.

#include "conn_req.h"

#include <algorithm>
#include <cstdint>
#include <new>

#include "conn.h"
#include "export.h"
#include "log_internal.h"
#include "mr.h"
#include "srq.h"

namespace rpma {

namespace {

int BuildReq(rpma_peer* peer, prov::CmId* id, const rpma_conn_cfg& cfg,
             rpma_conn_req* req) {
  rpma_cq* srq_rcq = cfg.srq != nullptr ? cfg.srq->rcq.get() : nullptr;
  // One channel cannot serve both this connection's CQ and an RCQ that is
  // shared by all connections of the SRQ.
  if (cfg.shared_channel && srq_rcq != nullptr) {
    RPMA_LOG_ERROR(
        "a shared completion channel cannot be used with an SRQ that has its "
        "own receive CQ");
    return RPMA_E_INVAL;
  }
  prov::Pd* pd = peer->pd.get();
  int rc;
  if (cfg.shared_channel) {
    rc = pd->CreateCompletionChannel(&req->shared_channel);
    if (rc != 0) {
      return RPMA_PROVIDER_FAILED(rc, "creating a completion channel");
    }
  }
  // An SRQ with its own RCQ takes every receive; cfg's rcq_size is then
  // ignored and the connection has no RCQ.
  const bool own_rcq = srq_rcq == nullptr && cfg.rcq_size > 0;
  // A CQ overrun is fatal on hardware, and librpma's defaults overrun: one
  // CQ of 10 for 10 send and 10 receive WRs, all of which complete (at the
  // latest flushed at disconnect). So each CQ is created large enough for
  // every WR that can complete on it; cfg's sizes stay what the getters
  // report (devices round CQ sizes up anyway).
  const uint64_t recvs_here =
      (srq_rcq == nullptr && !own_rcq) ? cfg.rq_size : 0;
  const uint64_t main_size =
      std::max<uint64_t>(cfg.cq_size, uint64_t{cfg.sq_size} + recvs_here);
  req->cq_entries =
      static_cast<uint32_t>(std::min<uint64_t>(main_size, UINT32_MAX));
  rc = CqNew(pd, req->cq_entries, req->shared_channel.get(), &req->cq);
  if (rc != 0) return rc;
  if (own_rcq) {
    req->rcq_entries = std::max(cfg.rcq_size, cfg.rq_size);
    rc = CqNew(pd, req->rcq_entries, req->shared_channel.get(), &req->rcq);
    if (rc != 0) return rc;
  }
  prov::QpInit init;
  init.send_cq = req->cq->cq.get();
  init.recv_cq = srq_rcq != nullptr    ? srq_rcq->cq.get()
                 : req->rcq != nullptr ? req->rcq->cq.get()
                                       : req->cq->cq.get();
  init.srq = cfg.srq != nullptr ? cfg.srq->srq.get() : nullptr;
  init.sq_size = cfg.sq_size;
  init.rq_size = cfg.rq_size;
  rc = id->CreateQp(init);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "creating a queue pair");
  }
  req->qp_init = init;
  return 0;
}

}  // namespace

int ConnReqFromId(rpma_peer* peer, std::unique_ptr<prov::CmId> id,
                  const rpma_conn_cfg& cfg,
                  std::shared_ptr<prov::CmChannel> origin,
                  std::unique_ptr<rpma_conn_req>* out) {
  const bool passive = origin != nullptr;
  std::unique_ptr<rpma_conn_req> req(new (std::nothrow) rpma_conn_req(peer));
  int rc =
      req == nullptr ? RPMA_E_NOMEM : BuildReq(peer, id.get(), cfg, req.get());
  if (rc != 0) {
    // An incoming request that cannot be prepared is rejected at once, so
    // the client is not left waiting for its timeout.
    if (passive) (void)id->Reject();
    id.reset();  // before the CQs its QP may use
    return rc;
  }
  req->passive = passive;
  req->uses_srq = cfg.srq != nullptr;
  req->origin_channel = std::move(origin);
  req->id = std::move(id);
  *out = std::move(req);
  return 0;
}

}  // namespace rpma

namespace {

// Releases a request; an incoming one is rejected first (the client sees
// RPMA_CONN_REJECTED). Returns the first error.
int ReqRelease(std::unique_ptr<rpma_conn_req> req) {
  int ret = 0;
  if (req->passive && req->id != nullptr) {
    int rc = req->id->Reject();
    if (rc != 0)
      ret = RPMA_PROVIDER_FAILED(rc, "rejecting a connection request");
  }
  req.reset();  // QP, RCQ, CQ, shared channel; the id tears down
  return ret;
}

}  // namespace

RPMA_EXPORT int rpma_conn_req_new(struct rpma_peer* peer, const char* addr,
                                  const char* port,
                                  const struct rpma_conn_cfg* cfg,
                                  struct rpma_conn_req** req_ptr) {
  if (peer == nullptr || addr == nullptr || port == nullptr ||
      req_ptr == nullptr)
    return RPMA_E_INVAL;
  const rpma_conn_cfg& c = cfg != nullptr ? *cfg : rpma::DefaultConnCfg();

  std::unique_ptr<rpma::prov::CmId> id;
  int rc = peer->pd->CreateActiveId(addr, port, c.timeout_ms, &id);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED_NOMEM(rc, "resolving %s:%s", addr, port);
  }
  std::unique_ptr<rpma_conn_req> req;
  rc = rpma::ConnReqFromId(peer, std::move(id), c, nullptr, &req);
  if (rc != 0) return rc;
  RPMA_LOG_NOTICE("requesting a connection to %s:%s", addr, port);
  *req_ptr = req.release();
  return 0;
}

RPMA_EXPORT int rpma_conn_req_delete(struct rpma_conn_req** req_ptr) {
  if (req_ptr == nullptr) return RPMA_E_INVAL;
  if (*req_ptr == nullptr) return 0;
  std::unique_ptr<rpma_conn_req> req(*req_ptr);
  *req_ptr = nullptr;
  return ReqRelease(std::move(req));
}

RPMA_EXPORT int rpma_conn_req_connect(
    struct rpma_conn_req** req_ptr, const struct rpma_conn_private_data* pdata,
    struct rpma_conn** conn_ptr) {
  if (req_ptr == nullptr || *req_ptr == nullptr) return RPMA_E_INVAL;
  std::unique_ptr<rpma_conn_req> req(*req_ptr);
  *req_ptr = nullptr;  // consumed from here on, whatever happens
  if (conn_ptr == nullptr ||
      (pdata != nullptr && (pdata->ptr == nullptr || pdata->len == 0))) {
    (void)ReqRelease(std::move(req));
    return RPMA_E_INVAL;
  }
  const void* data = pdata != nullptr ? pdata->ptr : nullptr;
  uint8_t len = pdata != nullptr ? pdata->len : 0;

  std::unique_ptr<rpma_conn> conn;
  int rc;
  if (req->passive) {
    rc = req->id->Accept(data, len);
    if (rc != 0) {
      // req (QP, CQs, id) is released on return: the client is rejected.
      return RPMA_PROVIDER_FAILED(rc, "accepting a connection request");
    }
    // On failure ConnNew disconnects the accepted id before releasing it.
    rc = rpma::ConnNew(std::move(req), &conn);
    if (rc != 0) return rc;
  } else {
    rc = rpma::ConnNew(std::move(req), &conn);
    if (rc != 0) return rc;
    rc = conn->id->Connect(data, len);  // the first byte on the wire
    if (rc != 0) {
      // conn (QP, CQs, id) is released on return.
      return RPMA_PROVIDER_FAILED(rc, "initiating a connection");
    }
  }
  *conn_ptr = conn.release();
  return 0;
}

RPMA_EXPORT int rpma_conn_req_get_private_data(
    const struct rpma_conn_req* req, struct rpma_conn_private_data* pdata) {
  if (req == nullptr || pdata == nullptr) return RPMA_E_INVAL;
  if (req->private_data.empty()) {
    pdata->ptr = nullptr;
    pdata->len = 0;
  } else {
    pdata->ptr = const_cast<uint8_t*>(req->private_data.data());
    pdata->len = static_cast<uint8_t>(req->private_data.size());
  }
  return 0;
}

RPMA_EXPORT int rpma_conn_req_recv(struct rpma_conn_req* req,
                                   struct rpma_mr_local* dst, size_t offset,
                                   size_t len, const void* op_context) {
  // dst is mandatory here (unlike rpma_recv); op_context is not checked.
  if (req == nullptr || dst == nullptr) return RPMA_E_INVAL;
  rpma::prov::RecvWr wr = rpma::MakeRecvWr(dst, offset, len, op_context);
  int rc = req->id->qp()->PostRecv(wr);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "posting a receive");
  }
  req->recv_posted = true;
  return 0;
}
