// rpma_conn_group_* and rpma_conn_req_set_group (rpma_ext.h): many
// connections driven through one completion channel, one CM event channel
// and one fd.

#include "conn_group.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "conn.h"
#include "conn_req.h"
#include "cq.h"
#include "export.h"
#include "ext_errors.h"
#include "log_internal.h"
#include "rpma_ext.h"

rpma_conn_group::~rpma_conn_group() {
  if (epfd >= 0) close(epfd);
}

namespace rpma {

GroupMembership::~GroupMembership() {
  {
    std::lock_guard<std::mutex> lock(group_->mu);
    for (const prov::Cq* cq : bound_) {
      if (cq != nullptr) group_->by_cq.erase(cq);
    }
    if (conn_ != nullptr) group_->by_id.erase(conn_->id.get());
  }
  group_->members.fetch_sub(1);
}

void GroupMembership::Bind(const prov::Cq* cq, const prov::Cq* rcq) {
  std::lock_guard<std::mutex> lock(group_->mu);
  bound_[0] = cq;
  bound_[1] = rcq;
  for (const prov::Cq* c : bound_) {
    if (c != nullptr) group_->by_cq[c] = nullptr;
  }
}

void GroupMembership::Enter(rpma_conn* conn) {
  std::lock_guard<std::mutex> lock(group_->mu);
  conn_ = conn;
  for (const prov::Cq* c : bound_) {
    if (c != nullptr) group_->by_cq[c] = conn;
  }
  group_->by_id[conn->id.get()] = conn;
}

namespace {

int SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return -errno;
  return 0;
}

int Nest(int epfd, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int GroupInit(rpma_conn_group* g) {
  prov::Pd* pd = g->peer->pd.get();
  int rc = pd->CreateCompletionChannel(&g->channel);
  if (rc == 0) rc = pd->CreateCmChannel(&g->cm);
  if (rc == 0) rc = SetNonBlocking(g->channel->fd());
  if (rc == 0) rc = SetNonBlocking(g->cm->fd());
  if (rc == 0) {
    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (g->epfd < 0) rc = -errno;
  }
  if (rc == 0) rc = Nest(g->epfd, g->channel->fd());
  if (rc == 0) rc = Nest(g->epfd, g->cm->fd());
  return rc;
}

// The next CM event of a member, queued on it (under the group's lock,
// so a member deleted meanwhile is either unmapped before or after).
// 0 and *conn, RPMA_E_NO_EVENT, or a provider failure.
int NextConnEvent(rpma_conn_group* g, rpma_conn** conn) {
  for (;;) {
    prov::CmEvent ev;
    int rc = g->cm->TryGetEvent(&ev);
    if (rc == -ENODATA || rc == -EAGAIN) return RPMA_E_NO_EVENT;
    if (rc != 0) return RPMA_PROVIDER_FAILED(rc, "getting a group's CM event");
    std::lock_guard<std::mutex> lock(g->mu);
    auto it = g->by_id.find(ev.id);
    if (it == g->by_id.end()) continue;  // a member deleted meanwhile
    {
      std::lock_guard<std::mutex> events(it->second->events_mu);
      it->second->group_events.push_back(std::move(ev));
    }
    *conn = it->second;
    return 0;
  }
}

// The next fired CQ of a member, acknowledged and re-armed.
int NextCompletion(rpma_conn_group* g, rpma_conn** conn) {
  for (;;) {
    prov::Cq* fired = nullptr;
    int rc = g->channel->TryGetEvent(&fired);
    if (rc == -EAGAIN) return RPMA_E_NO_EVENT;
    if (rc != 0) {
      return RPMA_PROVIDER_FAILED(rc, "getting a group's completion event");
    }
    // Its owner may be deleting it on another thread (a request refused
    // while a worker drives the group): acknowledged without touching it
    // (verbs' destroy waits for that), re-armed only while listed, under
    // the lock its owner's membership takes before the CQ goes.
    g->channel->Ack(fired, 1);
    std::lock_guard<std::mutex> lock(g->mu);
    auto it = g->by_cq.find(fired);
    if (it == g->by_cq.end()) continue;  // deleted
    rc = fired->RequestNotify();
    if (rc != 0) return RPMA_PROVIDER_FAILED(rc, "re-arming a CQ");
    if (it->second == nullptr) continue;  // not connected yet
    *conn = it->second;
    return 0;
  }
}

}  // namespace
}  // namespace rpma

RPMA_EXPORT int rpma_conn_group_new(struct rpma_peer* peer,
                                    struct rpma_conn_group** group_ptr) {
  if (peer == nullptr || group_ptr == nullptr) return RPMA_E_INVAL;
  std::unique_ptr<rpma_conn_group> g(new (std::nothrow) rpma_conn_group(peer));
  if (g == nullptr) return RPMA_E_NOMEM;
  int rc = rpma::GroupInit(g.get());
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED_NOMEM(rc, "creating a connection group");
  }
  *group_ptr = g.release();
  return 0;
}

RPMA_EXPORT int rpma_conn_group_delete(struct rpma_conn_group** group_ptr) {
  if (group_ptr == nullptr) return RPMA_E_INVAL;
  if (*group_ptr == nullptr) return 0;
  if ((*group_ptr)->members.load() != 0) {
    RPMA_LOG_ERROR("the connection group still has %d members",
                   (*group_ptr)->members.load());
    return RPMA_E_INVAL;
  }
  delete *group_ptr;
  *group_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_conn_group_get_fd(const struct rpma_conn_group* group,
                                       int* fd) {
  if (group == nullptr || fd == nullptr) return RPMA_E_INVAL;
  *fd = group->epfd;
  return 0;
}

RPMA_EXPORT int rpma_conn_group_next(struct rpma_conn_group* group,
                                     struct rpma_conn** conn_ptr, int* what) {
  if (group == nullptr || conn_ptr == nullptr || what == nullptr)
    return RPMA_E_INVAL;
  rpma_conn* conn = nullptr;
  int rc = rpma::NextConnEvent(group, &conn);
  if (rc == 0) {
    *what = RPMA_CONN_GROUP_EVENT;
  } else if (rc == RPMA_E_NO_EVENT) {
    rc = rpma::NextCompletion(group, &conn);
    if (rc == 0) {
      *what = RPMA_CONN_GROUP_COMPLETION;
    } else if (rc == RPMA_E_NO_EVENT) {
      // tcp: the socket I/O the completion channel ran may have queued a
      // connection event (the peer hung up).
      rc = rpma::NextConnEvent(group, &conn);
      if (rc == 0) *what = RPMA_CONN_GROUP_EVENT;
    }
  }
  if (rc != 0) return rc;
  *conn_ptr = conn;
  return 0;
}

RPMA_EXPORT int rpma_conn_req_set_group(struct rpma_conn_req* req,
                                        struct rpma_conn_group* group) {
  if (req == nullptr || group == nullptr) return RPMA_E_INVAL;
  if (req->id == nullptr || req->id->qp() == nullptr) return RPMA_E_INVAL;
  if (req->group != nullptr) {
    RPMA_LOG_ERROR("the request is a member of a connection group already");
    return RPMA_E_INVAL;
  }
  if (req->uses_srq || req->shared_channel != nullptr) {
    RPMA_LOG_ERROR(
        "a request with a shared RQ or a shared completion channel cannot "
        "join a connection group");
    return RPMA_E_INVAL;
  }
  if (req->recv_posted) {
    RPMA_LOG_ERROR("receives were posted to the request; it cannot join");
    return RPMA_E_INVAL;
  }
  if (group->peer->device != req->peer->device) {
    RPMA_LOG_ERROR("the connection group is of another device");
    return RPMA_E_INVAL;
  }
  std::unique_ptr<rpma::GroupMembership> member(
      new (std::nothrow) rpma::GroupMembership(group));
  if (member == nullptr) return RPMA_E_NOMEM;
  rpma::prov::Pd* pd = req->peer->pd.get();
  std::unique_ptr<rpma_cq> cq;
  std::unique_ptr<rpma_cq> rcq;
  int rc = rpma::CqNew(pd, req->cq_entries, group->channel.get(), &cq);
  if (rc == 0 && req->rcq != nullptr) {
    rc = rpma::CqNew(pd, req->rcq_entries, group->channel.get(), &rcq);
  }
  if (rc != 0) return rc;
  rpma::prov::QpInit init = req->qp_init;
  init.send_cq = cq->cq.get();
  init.recv_cq = rcq != nullptr ? rcq->cq.get() : cq->cq.get();
  rc = req->id->ReplaceQp(init);
  if (rc != 0) {
    return rpma::QpRecreateFailed(rc, "recreating a queue pair on a group");
  }
  // The old QP is gone: its CQs (and their channels) can go too.
  req->qp_init = init;
  req->cq = std::move(cq);
  req->rcq = std::move(rcq);
  member->Bind(req->cq->cq.get(),
               req->rcq != nullptr ? req->rcq->cq.get() : nullptr);
  req->group = std::move(member);
  return 0;
}
