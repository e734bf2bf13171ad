// rpma_ep_*: the listening endpoint and incoming connection requests.

#include <new>

#include "conn_cfg.h"
#include "conn_req.h"
#include "export.h"
#include "log_internal.h"
#include "peer.h"

struct rpma_ep {
  explicit rpma_ep(rpma_peer* p) : peer(p) {}
  rpma::PeerRef peer;  // first: released last
  // Shared with the requests taken from it: a pending request's id stays
  // on this channel until the request is deleted or connected (verbs:
  // rdma_destroy_id() of an id whose channel was destroyed is a
  // use-after-free), so the channel lives until the last of them is gone.
  std::shared_ptr<rpma::prov::CmChannel> evch;
  std::unique_ptr<rpma::prov::Listener> listener;  // before its channel
};

RPMA_EXPORT int rpma_ep_listen(struct rpma_peer* peer, const char* addr,
                               const char* port, struct rpma_ep** ep_ptr) {
  if (peer == nullptr || addr == nullptr || port == nullptr ||
      ep_ptr == nullptr)
    return RPMA_E_INVAL;
  std::unique_ptr<rpma_ep> ep(new (std::nothrow) rpma_ep(peer));
  if (ep == nullptr) return RPMA_E_NOMEM;
  std::unique_ptr<rpma::prov::CmChannel> evch;
  int rc = peer->pd->CreateCmChannel(&evch);
  ep->evch = std::move(evch);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "creating an event channel");
  }
  rc = peer->pd->Listen(addr, port, ep->evch.get(), &ep->listener);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED_NOMEM(rc, "listening on %s:%s", addr, port);
  }
  RPMA_LOG_NOTICE("waiting for incoming connection on %s:%s", addr, port);
  *ep_ptr = ep.release();
  return 0;
}

RPMA_EXPORT int rpma_ep_shutdown(struct rpma_ep** ep_ptr) {
  if (ep_ptr == nullptr) return RPMA_E_INVAL;
  // Connections accepted from it own their CM ids and channels: they stay;
  // pending requests keep the channel their ids are on.
  delete *ep_ptr;
  *ep_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_ep_get_fd(const struct rpma_ep* ep, int* fd) {
  if (ep == nullptr || fd == nullptr) return RPMA_E_INVAL;
  *fd = ep->evch->fd();
  return 0;
}

RPMA_EXPORT int rpma_ep_next_conn_req(struct rpma_ep* ep,
                                      const struct rpma_conn_cfg* cfg,
                                      struct rpma_conn_req** req_ptr) {
  if (ep == nullptr || req_ptr == nullptr) return RPMA_E_INVAL;
  const rpma_conn_cfg& c = cfg != nullptr ? *cfg : rpma::DefaultConnCfg();
  rpma::prov::CmEvent ev;
  int rc = ep->evch->GetEvent(&ev);
  if (rc == -ENODATA || rc == -EAGAIN) return RPMA_E_NO_EVENT;
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "getting an endpoint event");
  }
  if (ev.type != rpma::prov::CmEventType::kConnectRequest ||
      ev.new_id == nullptr) {
    RPMA_LOG_ERROR("unexpected endpoint event %d (not a connection request)",
                   static_cast<int>(ev.type));
    return RPMA_E_INVAL;
  }
  std::unique_ptr<rpma_conn_req> req;
  // On failure the incoming request is rejected (the client sees
  // RPMA_CONN_REJECTED instead of waiting for a timeout).
  rc = rpma::ConnReqFromId(ep->peer.get(), std::move(ev.new_id), c, ep->evch,
                           &req);
  if (rc != 0) return rc;
  req->private_data = std::move(ev.private_data);
  RPMA_LOG_NOTICE("incoming connection request");
  *req_ptr = req.release();
  return 0;
}
