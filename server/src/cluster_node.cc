#include "cluster_node.h"

#include <chrono>

#include "kv/cluster/controller.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster/membership.h"

namespace kv::server {

Result<std::unique_ptr<ClusterNode>> ClusterNode::Start(
    const Options& options, std::function<void()> on_fence) {
  std::unique_ptr<ClusterNode> node(new ClusterNode());
  Result<std::unique_ptr<cluster::EtcdHttp>> etcd =
      cluster::EtcdHttp::Open(options.etcd);
  if (!etcd.ok()) return etcd.status();
  node->etcd_ = std::move(etcd).value();

  cluster::Membership::Options m;
  m.cluster = options.cluster_name;
  m.node_id = options.node_id;
  m.address = options.address;
  m.started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  m.lease.ttl = options.lease_ttl;
  auto membership =
      cluster::Membership::Join(*node->etcd_, m, std::move(on_fence));
  if (!membership.ok()) return membership.status();
  node->membership_ = std::move(membership).value();

  // Every node is a candidate; the elected one keeps the map (no desired
  // keyspaces yet: it repairs replica sets of a map an operator wrote).
  cluster::Controller::Options c;
  c.cluster = options.cluster_name;
  c.node_id = options.node_id;
  c.lease.ttl = options.lease_ttl;
  auto controller = cluster::Controller::Start(*node->etcd_, c);
  if (!controller.ok()) {
    (void)node->membership_->Leave();
    return controller.status();
  }
  node->controller_ = std::move(controller).value();
  return node;
}

ClusterNode::~ClusterNode() {
  // Declaration order would destroy the controller first anyway; the
  // explicit reset documents that both go before the etcd client.
  controller_.reset();
  membership_.reset();
}

Status ClusterNode::Leave() {
  if (controller_) controller_->Stop();
  return membership_->Leave();
}

bool ClusterNode::fenced() const { return membership_->fenced(); }

}  // namespace kv::server
