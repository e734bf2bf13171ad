#include "cluster_node.h"

#include <algorithm>
#include <chrono>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/controller.h"
#include "kv/cluster/etcd_endpoints.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/map_watcher.h"
#include "kv/cluster/membership.h"
#include "kv/cluster/node_registration.h"
#include "kv/cluster_slots.h"
#include "log.h"
#include "move_manager.h"
#include "replica_forwarder.h"

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
          if (!raw->quiesced_) f(raw->applied_revision_);
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
  {
    // Commits still replicating fail (unknown outcome) instead of
    // reaching for the etcd client that goes below.
    std::lock_guard<std::mutex> lock(apply_mu_);
    for (auto& [name, f] : replicas_) f->Gone();
  }
  moves_.reset();  // before the watcher its reapply reads
  watcher_.reset();
  membership_.reset();
}

void ClusterNode::Apply(const cluster::ClusterMap& map, int64_t revision) {
  std::lock_guard<std::mutex> lock(apply_mu_);
  if (quiesced_) return;
  ApplyLocked(map, revision);
}

void ClusterNode::Quiesce() {
  {
    std::lock_guard<std::mutex> lock(apply_mu_);
    quiesced_ = true;
    for (auto& [name, f] : replicas_) f->Gone();
  }
  // An outgoing move's forwarding is attached to its shard's commit point,
  // which the server owns: it detaches while the server still lives (a
  // TSan CI run saw ~MoveSource detach from a freed one after the fenced
  // shutdown). Outside apply_mu_: the manager's thread takes it.
  if (moves_ != nullptr) moves_->Stop();
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
  std::vector<Backup> backups;
  ReplicaSets sets;
  for (const cluster::KeyspaceShards& ks : map.keyspaces()) {
    for (const cluster::Shard& shard : ks.shards) {
      const auto me = std::find(shard.replicas.begin(), shard.replicas.end(),
                                options_.node_id);
      if (me == shard.replicas.end()) continue;
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
      const std::string name = ShardKeyspaceName(ks.name, shard.id);
      const uint32_t id = ShardKeyspaceId(ks.id, shard.id);
      if (me != shard.replicas.begin()) {
        backups.push_back({name, id, shard.epoch});
        continue;
      }
      wanted.push_back({name, id, shard.epoch});
      sets[name] = {ks.name,
                    shard.id,
                    {shard.replicas.begin() + 1, shard.replicas.end()}};
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
    // A backup the map made primary (a failover): it holds every write
    // that was acknowledged, because acknowledgements waited for it.
    const uint32_t was_backup = options_.shards->BackupEpoch(w.name);
    if (!had && was_backup != 0) {
      Logf(
          "shard '%s': promoted from backup (epoch %u) to primary at epoch "
          "%u (map revision %lld)",
          w.name.c_str(), was_backup, w.epoch,
          static_cast<long long>(revision));
    }
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
                              "before and no move or join copied it here, so "
                              "it is not served empty");
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
  // Replication before the table: no commit of a shard with backups is
  // ever acknowledged without them.
  InstallReplicas(owned, sets);
  const std::vector<std::string> lost = options_.shards->Set(std::move(owned));
  RemoveReplicas(options_.shards->owned());
  ApplyBackups(backups, before, revision);
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

void ClusterNode::ApplyBackups(const std::vector<Backup>& wanted,
                               const ShardTable::Owned& owned_before,
                               int64_t revision) {
  const ShardTable::Owned before = options_.shards->backups();
  ShardTable::Owned next;
  std::vector<std::string> joined_names;
  for (const Backup& b : wanted) {
    // A backup holds every acknowledged write only if it has been one (or
    // the primary) since the shard began: at epoch 1, or when this process
    // was its backup or primary already. A node named at a later epoch
    // without that has none of the data (a new backup joins by a catch-up
    // copy, not by a map edit): never taken, so its primary's link is
    // refused and the primary reports it.
    const uint32_t incoming = options_.shards->IncomingEpoch(b.name);
    const bool joined = incoming != 0 && incoming + 1 == b.epoch;
    const bool continuous = b.epoch == 1 || before.count(b.name) ||
                            owned_before.count(b.name) || joined;
    if (!continuous) {
      Logf(
          "shard '%s' epoch %u names this node a backup, but it holds no "
          "current copy (map revision %lld): not taken",
          b.name.c_str(), b.epoch, static_cast<long long>(revision));
      continue;
    }
    Status st = options_.ensure_shard(b.name, b.id, 1, b.epoch == 1);
    if (!st.ok()) {
      Logf("shard '%s' cannot be backed up here (map revision %lld): %s",
           b.name.c_str(), static_cast<long long>(revision),
           st.ToString().c_str());
      continue;
    }
    auto it = before.find(b.name);
    if (it == before.end() || it->second != b.epoch) {
      Logf("backup of shard '%s' at epoch %u (map revision %lld)%s",
           b.name.c_str(), b.epoch, static_cast<long long>(revision),
           joined ? ": joined after its catch-up copy" : "");
    }
    next.emplace(b.name, b.epoch);
    if (joined) joined_names.push_back(b.name);
  }
  for (const auto& [name, epoch] : before) {
    if (!next.count(name) && !options_.shards->owned().count(name)) {
      Logf("no longer a backup of shard '%s' (map revision %lld)", name.c_str(),
           static_cast<long long>(revision));
    }
  }
  options_.shards->SetBackups(std::move(next));
  // Incoming no more: a backup now (its primary links at the new epoch).
  for (const std::string& name : joined_names) {
    options_.shards->RemoveIncoming(name);
  }
}

ForwardingCommitPoint* ClusterNode::CommitPointOf(const std::string& name) {
  return options_.move_host == nullptr
             ? nullptr
             : options_.move_host->ShardCommitPoint(name);
}

void ClusterNode::InstallReplicas(const ShardTable::Owned& owned,
                                  const ReplicaSets& sets) {
  for (const auto& [name, epoch] : owned) {
    auto set = sets.find(name);
    if (set == sets.end()) continue;
    auto it = replicas_.find(name);
    if (it == replicas_.end()) {
      if (set->second.backups.empty()) continue;  // none, none yet
      ForwardingCommitPoint* cp = CommitPointOf(name);
      if (cp == nullptr) continue;  // not made (logged by Apply)
      std::shared_ptr<ReplicaForwarder> f =
          MakeReplicaForwarder(name, set->second);
      // Current before it is plugged in: no commit sees it without its
      // replica set.
      f->Update(epoch, set->second.backups);
      cp->SetReplicas(f);
      it = replicas_.emplace(name, std::move(f)).first;
      Logf("shard '%s' epoch %u: replicating to %zu backup(s)", name.c_str(),
           epoch, set->second.backups.size());
    }
    it->second->Update(epoch, set->second.backups);
  }
}

void ClusterNode::RemoveReplicas(const ShardTable::Owned& owned) {
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    if (owned.count(it->first)) {
      ++it;
      continue;
    }
    // Waiting commits fail first (unknown outcome), so that the commit
    // point's lock is free for the change.
    it->second->Gone();
    ForwardingCommitPoint* cp = CommitPointOf(it->first);
    if (cp != nullptr) cp->SetReplicas(nullptr);
    it = replicas_.erase(it);
  }
}

std::shared_ptr<ReplicaForwarder> ClusterNode::MakeReplicaForwarder(
    const std::string& name, const ReplicaSet& set) {
  ReplicaForwarder::Options o;
  o.keyspace = name;
  o.peer_key = options_.peer_key;
  o.link_timeout = std::max<std::chrono::milliseconds>(std::chrono::seconds(1),
                                                       options_.lease_ttl / 2);
  o.max_wait = options_.lease_ttl * 3 + std::chrono::seconds(10);
  cluster::Etcd* etcd = etcd_.get();
  const std::string cluster = options_.cluster_name;
  o.resolve = [etcd, cluster](uint32_t node) -> Result<Endpoint> {
    Result<cluster::EtcdKeys> keys = cluster::EtcdKeys::ForCluster(cluster);
    if (!keys.ok()) return keys.status();
    Result<cluster::Range> r = etcd->Get(keys->node(node));
    if (!r.ok()) return r.status();
    if (r->kvs.empty()) {
      return Status::Unavailable("node " + std::to_string(node) +
                                 " is not registered (its lease is gone)");
    }
    Result<cluster::NodeRegistration> reg =
        cluster::NodeRegistration::Decode(r->kvs[0].value);
    if (!reg.ok()) return reg.status();
    return Endpoint::Parse(reg->address);
  };
  o.report = [etcd, cluster, ks = set.keyspace, shard = set.shard](
                 uint32_t epoch, uint32_t node, const Status&) {
    Result<cluster::EtcdKeys> keys = cluster::EtcdKeys::ForCluster(cluster);
    if (!keys.ok()) return;
    Result<int64_t> put =
        etcd->Put(keys->failed_backup(ks, shard, node), std::to_string(epoch));
    if (!put.ok()) {
      Logf("reporting backup %u of '%s' shard %u failed: %s", node, ks.c_str(),
           shard, put.status().ToString().c_str());
    }
  };
  return std::make_shared<ReplicaForwarder>(std::move(o));
}

Status ClusterNode::Leave() {
  if (controller_) controller_->Stop();
  return membership_->Leave();
}

bool ClusterNode::fenced() const { return membership_->fenced(); }

}  // namespace kv::server
