// struct rpma_conn_group (rpma_ext.h): one completion channel and one CM
// event channel shared by many connections, behind one epoll fd, and the
// maps from a fired CQ or an event's id back to the member connection.
//
// Members are counted from rpma_conn_req_set_group() until the request
// or the connection made from it is deleted (GroupMembership), so a group
// cannot be deleted under them. The maps hold the connections from
// rpma_conn_req_connect() until rpma_conn_delete().
#ifndef RPMA_CONN_GROUP_H_
#define RPMA_CONN_GROUP_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "peer.h"
#include "provider/provider.h"

struct rpma_conn;

struct rpma_conn_group {
  explicit rpma_conn_group(rpma_peer* p) : peer(p) {}
  ~rpma_conn_group();
  rpma::PeerRef peer;  // first: released after the channels
  std::unique_ptr<rpma::prov::CompletionChannel> channel;  // non-blocking
  std::unique_ptr<rpma::prov::CmChannel> cm;               // non-blocking
  int epfd = -1;  // nests channel->fd() and cm->fd()
  std::atomic<int> members{0};
  std::mutex mu;  // guards the maps
  // Every CQ on `channel` whose owner lives, to its connection (null while
  // the owner is a request): added when a request joins, erased (under mu)
  // before the CQ is destroyed. A fired CQ taken from the channel is
  // touched only if it is here, under mu: its owner may be deleting it on
  // another thread.
  std::unordered_map<const rpma::prov::Cq*, rpma_conn*> by_cq;
  std::unordered_map<const rpma::prov::CmId*, rpma_conn*> by_id;
};

namespace rpma {

// Counts one member (a request, then its connection) of a group for its
// lifetime; once Enter()ed, also maps the connection's CQs and id to it
// until destroyed. Declare it as the LAST member of the owner, so that it
// unmaps before the id and CQs are destroyed.
class GroupMembership {
 public:
  explicit GroupMembership(rpma_conn_group* group) : group_(group) {
    group_->members.fetch_add(1);
  }
  ~GroupMembership();
  GroupMembership(const GroupMembership&) = delete;
  GroupMembership& operator=(const GroupMembership&) = delete;
  rpma_conn_group* group() const { return group_; }
  // Lists the owner's CQs (rcq may be null) in by_cq, with no connection
  // yet, until destroyed (rpma_conn_req_set_group, once they are on its
  // channel).
  void Bind(const prov::Cq* cq, const prov::Cq* rcq);
  // Maps the bound CQs and conn's id to conn (rpma_conn_req_connect).
  void Enter(rpma_conn* conn);

 private:
  rpma_conn_group* const group_;
  rpma_conn* conn_ = nullptr;
  const prov::Cq* bound_[2] = {};
};

}  // namespace rpma

#endif  // RPMA_CONN_GROUP_H_
