// rpma_conn_*: connection lifecycle, events, private data and getters.

#include "conn.h"

#include <unistd.h>

#include <new>

#include "export.h"
#include "log_internal.h"
#include "peer_cfg.h"

namespace rpma {
namespace {

// librpma's APM flush reads 8 bytes into a registered page of its own.
int FlushBufferNew(rpma_conn* conn) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    RPMA_LOG_ERROR("mapping the flush buffer failed: %s", std::strerror(errno));
    return RPMA_E_NOMEM;
  }
  conn->flush_page = std::unique_ptr<void, Munmap>(p, Munmap{page});
  // Registered as librpma does, with RPMA_MR_USAGE_READ_DST: on iWARP the
  // read response lands as a remote write, so LOCAL_WRITE alone would fail
  // every flush and kill the QP.
  int rc = conn->peer->pd->RegMr(
      p, 8, UsageToAccess(conn->peer.get(), RPMA_MR_USAGE_READ_DST),
      &conn->flush_mr);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "registering the flush buffer");
  }
  return 0;
}

int ConnSetup(rpma_conn* conn) {
  prov::CmChannel* channel = nullptr;
  if (conn->group != nullptr) {
    // Mapped before the id moves: the group must know whose its events
    // are from the first one on.
    conn->group->Enter(conn);
    channel = conn->group->group()->cm.get();
  } else {
    int rc = conn->peer->pd->CreateCmChannel(&conn->evch);
    if (rc != 0) {
      return RPMA_PROVIDER_FAILED(rc, "creating an event channel");
    }
    channel = conn->evch.get();
  }
  int rc = conn->id->Migrate(channel);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "moving the CM id to its channel");
  }
  conn->origin_channel.reset();  // the id is off the endpoint's channel
  if (conn->native_flush) return 0;
  return FlushBufferNew(conn);
}

}  // namespace

int ConnNew(std::unique_ptr<rpma_conn_req> req,
            std::unique_ptr<rpma_conn>* out) {
  std::unique_ptr<rpma_conn> conn(new (std::nothrow)
                                      rpma_conn(req->peer.get()));
  if (conn == nullptr) {
    if (req->passive) (void)req->id->Disconnect();
    return RPMA_E_NOMEM;
  }
  const bool passive = req->passive;
  conn->native_flush = conn->peer->caps.native_flush;
  conn->native_atomic_write = conn->peer->caps.native_atomic_write;
  conn->shared_channel = std::move(req->shared_channel);
  conn->cq = std::move(req->cq);
  conn->rcq = std::move(req->rcq);
  conn->origin_channel = std::move(req->origin_channel);
  conn->id = std::move(req->id);
  conn->origin_peer = std::move(req->origin_peer);
  conn->private_data = std::move(req->private_data);
  conn->group = std::move(req->group);
  req.reset();
  int rc = ConnSetup(conn.get());
  if (rc != 0) {
    // Accepted but unusable: tell the client before the id goes away.
    if (passive) (void)conn->id->Disconnect();
    return rc;
  }
  *out = std::move(conn);
  return 0;
}

}  // namespace rpma

RPMA_EXPORT int rpma_conn_get_event_fd(const struct rpma_conn* conn, int* fd) {
  if (conn == nullptr || fd == nullptr) return RPMA_E_INVAL;
  *fd = conn->group != nullptr ? conn->group->group()->epfd : conn->evch->fd();
  return 0;
}

namespace {

// A member of a connection group: the next event the group took for it.
int NextGroupEvent(rpma_conn* conn, rpma::prov::CmEvent* ev) {
  std::lock_guard<std::mutex> lock(conn->events_mu);
  if (conn->group_events.empty()) return -ENODATA;
  *ev = std::move(conn->group_events.front());
  conn->group_events.pop_front();
  return 0;
}

}  // namespace

RPMA_EXPORT int rpma_conn_next_event(struct rpma_conn* conn,
                                     enum rpma_conn_event* event) {
  if (conn == nullptr || event == nullptr) return RPMA_E_INVAL;
  rpma::prov::CmEvent ev;
  int rc = conn->group != nullptr ? NextGroupEvent(conn, &ev)
                                  : conn->evch->GetEvent(&ev);
  if (rc == -ENODATA || rc == -EAGAIN) return RPMA_E_NO_EVENT;
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "getting a connection event");
  }
  using T = rpma::prov::CmEventType;
  enum rpma_conn_event e;
  switch (ev.type) {
    case T::kEstablished:
      e = RPMA_CONN_ESTABLISHED;
      break;
    case T::kConnectError:
    case T::kDeviceRemoval:
      e = RPMA_CONN_LOST;
      break;
    case T::kDisconnected:
    case T::kTimewaitExit:
      e = RPMA_CONN_CLOSED;
      break;
    case T::kRejected:
      e = RPMA_CONN_REJECTED;
      break;
    case T::kUnreachable:
      e = RPMA_CONN_UNREACHABLE;
      break;
    default:
      RPMA_LOG_WARNING("unexpected connection event %d",
                       static_cast<int>(ev.type));
      return RPMA_E_UNKNOWN;
  }
  if (e == RPMA_CONN_ESTABLISHED && !ev.private_data.empty()) {
    // The active side learns the server's accept data here; the passive
    // side already holds the client's (copied from the request).
    std::lock_guard<std::mutex> lock(conn->pdata_mu);
    if (conn->private_data.empty())
      conn->private_data = std::move(ev.private_data);
  }
  RPMA_LOG_NOTICE("%s", rpma_utils_conn_event_2str(e));
  *event = e;
  return 0;
}

RPMA_EXPORT int rpma_conn_get_private_data(
    const struct rpma_conn* conn, struct rpma_conn_private_data* pdata) {
  if (conn == nullptr || pdata == nullptr) return RPMA_E_INVAL;
  std::lock_guard<std::mutex> lock(conn->pdata_mu);
  if (conn->private_data.empty()) {
    pdata->ptr = nullptr;
    pdata->len = 0;
  } else {
    pdata->ptr = const_cast<uint8_t*>(conn->private_data.data());
    pdata->len = static_cast<uint8_t>(conn->private_data.size());
  }
  return 0;
}

RPMA_EXPORT int rpma_conn_apply_remote_peer_cfg(
    struct rpma_conn* conn, const struct rpma_peer_cfg* pcfg) {
  if (conn == nullptr || pcfg == nullptr) return RPMA_E_INVAL;
  conn->direct_write_to_pmem.store(pcfg->direct_write_to_pmem);
  return 0;
}

RPMA_EXPORT int rpma_conn_get_qp_num(const struct rpma_conn* conn,
                                     uint32_t* qp_num) {
  if (conn == nullptr || qp_num == nullptr) return RPMA_E_INVAL;
  *qp_num = conn->id->qp()->qp_num();
  return 0;
}

RPMA_EXPORT int rpma_conn_get_cq(const struct rpma_conn* conn,
                                 struct rpma_cq** cq_ptr) {
  if (conn == nullptr || cq_ptr == nullptr) return RPMA_E_INVAL;
  *cq_ptr = conn->cq.get();
  return 0;
}

RPMA_EXPORT int rpma_conn_get_rcq(const struct rpma_conn* conn,
                                  struct rpma_cq** rcq_ptr) {
  if (conn == nullptr || rcq_ptr == nullptr) return RPMA_E_INVAL;
  *rcq_ptr = conn->rcq.get();
  return 0;
}

RPMA_EXPORT int rpma_conn_get_compl_fd(const struct rpma_conn* conn, int* fd) {
  if (conn == nullptr || fd == nullptr) return RPMA_E_INVAL;
  if (conn->shared_channel == nullptr) return RPMA_E_NOT_SHARED_CHNL;
  *fd = conn->shared_channel->fd();
  return 0;
}

RPMA_EXPORT int rpma_conn_wait(struct rpma_conn* conn, int flags,
                               struct rpma_cq** cq, bool* is_rcq) {
  (void)flags;  // reserved by librpma (pmem/rpma#1743)
  if (conn == nullptr || cq == nullptr) return RPMA_E_INVAL;
  if (conn->shared_channel == nullptr) return RPMA_E_NOT_SHARED_CHNL;
  rpma::prov::Cq* fired = nullptr;
  if (conn->shared_channel->GetEvent(&fired) != 0) return RPMA_E_NO_COMPLETION;
  rpma_cq* which = nullptr;
  if (fired == conn->cq->cq.get())
    which = conn->cq.get();
  else if (conn->rcq != nullptr && fired == conn->rcq->cq.get())
    which = conn->rcq.get();
  if (which == nullptr) {
    RPMA_LOG_ERROR("a completion event of an unknown CQ");
    return RPMA_E_UNKNOWN;
  }
  which->cq->AckEvents(1);
  int rc = which->cq->RequestNotify();
  if (rc != 0) {
    *cq = nullptr;
    return RPMA_PROVIDER_FAILED(rc, "re-arming a CQ");
  }
  *cq = which;
  if (is_rcq != nullptr) *is_rcq = which == conn->rcq.get();
  return 0;
}

RPMA_EXPORT int rpma_conn_disconnect(struct rpma_conn* conn) {
  if (conn == nullptr) return RPMA_E_INVAL;
  int rc = conn->id->Disconnect();
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED(rc, "disconnecting");
  }
  RPMA_LOG_NOTICE("requesting for disconnection");
  return 0;
}

RPMA_EXPORT int rpma_conn_delete(struct rpma_conn** conn_ptr) {
  if (conn_ptr == nullptr) return RPMA_E_INVAL;
  // No closed-state check (as librpma): the provider tears a live
  // connection down without blocking and the peer sees CLOSED.
  delete *conn_ptr;
  *conn_ptr = nullptr;
  return 0;
}
