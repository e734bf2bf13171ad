#include "cluster_node.h"

#include <algorithm>
#include <chrono>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/controller.h"
#include "kv/cluster/etcd_endpoints.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster/map_watcher.h"
#include "kv/cluster/membership.h"
#include "kv/cluster_slots.h"
#include "log.h"
#include "move_manager.h"

namespace kv::server {

ClusterNode::ClusterNode(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<ClusterNode>> ClusterNode::Start(
    const Options& options, std::function<void()> on_fence) {
  if (options.shards == nullptr || !options.ensure_shard) {
    return Status::InvalidArgument("a cluster node needs its shard table");
  }
  std::unique_ptr<ClusterNode> node(new ClusterNode(options));
  // A keepalive that hangs (an etcd shutting down accepts and never
  // answers) must give up well before the fencing deadline, so that the
  // next one can still renew: at most a third of the TTL (>= 1 s).
  Result<std::vector<Endpoint>> endpoints =
      cluster::ParseEtcdEndpoints(options.etcd);
  if (!endpoints.ok()) return endpoints.status();
  cluster::EtcdHttp::Options http;
  http.endpoints = std::move(endpoints).value();
  http.request_timeout = std::max<std::chrono::milliseconds>(
      std::chrono::seconds(1), options.lease_ttl / 3);
  http.request_timeout = std::min<std::chrono::milliseconds>(
      http.request_timeout, std::chrono::seconds(5));
  Result<std::unique_ptr<cluster::EtcdHttp>> etcd =
      cluster::EtcdHttp::Open(std::move(http));
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
  cluster::Membership* member = node->membership_.get();
  options.shards->SetLeaseCheck(
      [member] { return member->Alive(std::chrono::steady_clock::now()); });

  // Moves first: a hand-off this process was in before a restart keeps
  // its shard released before the map is applied (move_manager.h).
  if (options.move_host != nullptr) {
    MoveManager::Options mm;
    mm.cluster = options.cluster_name;
    mm.node_id = options.node_id;
    mm.shards = options.shards;
    mm.host = options.move_host;
    mm.peer_key = options.peer_key;
    mm.reapply = [raw = node.get()] {
      if (raw->watcher_ == nullptr) return;
      std::shared_ptr<const cluster::ClusterMap> map = raw->watcher_->map();
      if (map != nullptr) raw->Apply(*map, raw->watcher_->revision());
    };
    mm.with_applied_map =
        [raw = node.get()](const std::function<void(int64_t)>& f) {
          std::lock_guard<std::mutex> lock(raw->apply_mu_);
          f(raw->applied_revision_);
        };
    auto moves = MoveManager::Create(*node->etcd_, std::move(mm));
    if (!moves.ok()) {
      (void)node->membership_->Leave();
      return moves.status();
    }
    node->moves_ = std::move(moves).value();
    node->moves_->Prime();
  }

  // The shards this node serves follow the map from now on (the first
  // read is applied before Start returns).
  cluster::MapWatcher::Options w;
  w.cluster = options.cluster_name;
  w.on_map = [raw = node.get()](const cluster::ClusterMap& map,
                                int64_t revision) {
    raw->Apply(map, revision);
  };
  w.on_error = [](const Status& st) {
    Logf("cluster map: %s", st.ToString().c_str());
  };
  auto watcher = cluster::MapWatcher::Start(*node->etcd_, w);
  if (!watcher.ok()) {
    (void)node->membership_->Leave();
    return watcher.status();
  }
  node->watcher_ = std::move(watcher).value();

  // Every node is a candidate; the elected one keeps the map (no desired
  // keyspaces yet: it repairs replica sets of a map an operator wrote).
  cluster::Controller::Options c;
  c.cluster = options.cluster_name;
  c.node_id = options.node_id;
  c.lease.ttl = options.lease_ttl;
  c.rebalance = options.rebalance;
  c.max_moves = options.max_moves;
  auto controller = cluster::Controller::Start(*node->etcd_, c);
  if (!controller.ok()) {
    node->watcher_->Stop();
    (void)node->membership_->Leave();
    return controller.status();
  }
  node->controller_ = std::move(controller).value();
  if (node->moves_ != nullptr) node->moves_->Run();
  return node;
}

ClusterNode::~ClusterNode() {
  // Declaration order would destroy the controller first anyway; the
  // explicit reset documents that both go before the etcd client.
  controller_.reset();
  moves_.reset();  // before the watcher its reapply reads
  watcher_.reset();
  membership_.reset();
}

void ClusterNode::Apply(const cluster::ClusterMap& map, int64_t revision) {
  std::lock_guard<std::mutex> lock(apply_mu_);
  ApplyLocked(map, revision);
}

void ClusterNode::ApplyLocked(const cluster::ClusterMap& map,
                              int64_t revision) {
  applied_revision_ = std::max(applied_revision_, revision);
  struct Wanted {
    std::string name;
    uint32_t id;
    uint32_t epoch;
  };
  std::vector<Wanted> wanted;
  for (const cluster::KeyspaceShards& ks : map.keyspaces()) {
    for (const cluster::Shard& shard : ks.shards) {
      if (shard.primary() != options_.node_id) continue;
      if (ks.name.size() > kMaxClusterKeyspaceNameSize ||
          ks.id > kMaxClusterKeyspaceId || shard.id > kMaxShardId) {
        Logf(
            "cluster map revision %lld: keyspace '%s' shard %u cannot be "
            "a pool keyspace (name over %zu bytes, id over %u or shard over "
            "%u): not served",
            static_cast<long long>(revision), ks.name.c_str(), shard.id,
            kMaxClusterKeyspaceNameSize, kMaxClusterKeyspaceId, kMaxShardId);
        continue;
      }
      wanted.push_back({ShardKeyspaceName(ks.name, shard.id),
                        ShardKeyspaceId(ks.id, shard.id), shard.epoch});
    }
  }
  const ShardTable::Owned before = options_.shards->owned();
  uint32_t to_make = 0;
  for (const Wanted& w : wanted) to_make += before.count(w.name) ? 0 : 1;
  ShardTable::Owned owned;
  std::vector<std::string> moved_here;
  for (const Wanted& w : wanted) {
    const bool had = before.count(w.name) != 0;
    // A shard this node received by a move (incoming at the epoch before
    // the map's): the switch. One it handed off stays out (released)
    // unless it came back that way.
    const uint32_t incoming = options_.shards->IncomingEpoch(w.name);
    const bool arrived = !had && incoming != 0 && incoming + 1 == w.epoch;
    if (!had && options_.shards->released(w.name)) {
      if (!arrived) continue;
      options_.shards->Unrelease(w.name);
    }
    if (arrived) moved_here.push_back(w.name);
    if (!had) {
      // Only a new shard (epoch 1) starts empty. At a later epoch the
      // shard had another primary, whose data this pool does not hold
      // unless a move copied it here: serving it empty would answer
      // not_found for keys that exist. It stays unserved instead.
      Status st = options_.ensure_shard(w.name, w.id, to_make, w.epoch == 1);
      if (st.IsNotFound()) {
        st = Status::NotFound(st.message() + " and the shard is at epoch " +
                              std::to_string(w.epoch) +
                              ": its data is on the node that served it "
                              "before and no move copied it here "
                              "(replication is not built yet), so it is not "
                              "served empty");
      }
      if (to_make > 1) to_make--;
      if (!st.ok()) {
        Logf(
            "shard '%s' (id %u) given to this node at map revision %lld "
            "cannot be served: %s",
            w.name.c_str(), w.id, static_cast<long long>(revision),
            st.ToString().c_str());
        continue;
      }
    }
    if (!had || before.at(w.name) != w.epoch) {
      Logf("serving shard '%s' at epoch %u (map revision %lld)", w.name.c_str(),
           w.epoch, static_cast<long long>(revision));
    }
    owned.emplace(w.name, w.epoch);
  }
  const std::vector<std::string> lost = options_.shards->Set(std::move(owned));
  for (const std::string& name : moved_here) {
    options_.shards->RemoveIncoming(name);
    Logf("shard '%s' moved here: serving it (map revision %lld)", name.c_str(),
         static_cast<long long>(revision));
  }
  for (const std::string& name : lost) {
    Logf(
        "shard '%s' is no longer this node's (map revision %lld): its "
        "commits are refused with wrong_shard",
        name.c_str(), static_cast<long long>(revision));
  }
}

Status ClusterNode::Leave() {
  if (controller_) controller_->Stop();
  return membership_->Leave();
}

bool ClusterNode::fenced() const { return membership_->fenced(); }

}  // namespace kv::server
