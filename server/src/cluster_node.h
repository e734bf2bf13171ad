// kv::server::ClusterNode — this kvserver as a member of an rpkv cluster
// (docs/cluster.md; kvserver --cluster): its registration on an etcd
// lease (kv::cluster::Membership) and its candidacy for the controller
// (kv::cluster::Controller: any node may take over the controller).
//
// What it does not do yet (issue 23, in progress): serve shards. A node
// that joins takes no shards until the controller gives it some, and the
// server does not take shards yet, so a cluster node serves its pool's
// keyspaces as a single server does.
//
// Fencing: when the membership's deadline passes without a renewed lease
// (etcd unreachable, the process stalled), `on_fence` is called once from
// the membership's thread; kvserver then stops (exit 3, "fenced"), the
// conservative answer until it serves shards it must give up.
//
// Thread-safety: Start, Leave and the destructor from one thread;
// fenced() from any.
#ifndef KV_SERVER_CLUSTER_NODE_H_
#define KV_SERVER_CLUSTER_NODE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kv/status.h"

namespace kv::cluster {
class Controller;
class EtcdHttp;
class Membership;
}  // namespace kv::cluster

namespace kv::server {

class ClusterNode {
 public:
  struct Options {
    std::string etcd;          // "etcd://host:port[,host:port...]"
    std::string cluster_name;  // the etcd prefix /rpkv/<name>/
    uint32_t node_id = 0;      // 1..
    std::string address;       // host:port clients reach this node at
    std::chrono::seconds lease_ttl{5};
  };

  // Opens the etcd client, joins (registration on a lease, keepalive at
  // TTL/3) and starts the controller candidacy. Errors: invalid_argument
  // (bad endpoints, name, id, address, TTL); busy (another live node has
  // this id: the message names its address); unavailable / timed_out
  // (etcd not reachable: the message names the endpoints).
  static Result<std::unique_ptr<ClusterNode>> Start(
      const Options& options, std::function<void()> on_fence);

  ~ClusterNode();  // stops the controller; the lease is left to expire

  // Clean shutdown: stops the controller (resigning if it led) and
  // revokes the lease, so the registration goes at once.
  Status Leave();

  bool fenced() const;

 private:
  ClusterNode() = default;
  std::unique_ptr<kv::cluster::EtcdHttp> etcd_;
  std::unique_ptr<kv::cluster::Membership> membership_;
  std::unique_ptr<kv::cluster::Controller> controller_;
};

}  // namespace kv::server

#endif  // KV_SERVER_CLUSTER_NODE_H_
