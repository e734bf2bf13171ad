// kv::server::ClusterNode — this kvserver as a member of an rpkv cluster
// (docs/cluster.md; kvserver --cluster): its registration on an etcd
// lease (kv::cluster::Membership) and its candidacy for the controller
// (kv::cluster::Controller: any node may take over the controller).
//
// Shards (docs/cluster.md, "Serving shards"): a MapWatcher follows the
// map; every shard whose primary is this node is made a keyspace of the
// pool (kv/cluster_slots.h names and numbers it; created when missing)
// and entered in the ShardTable with its epoch, which admission, COMMIT
// and REFILL check. A node that joins takes no shards until the
// controller gives it some. A shard the map takes away leaves the table
// at once (its commits get wrong_shard; logged).
//
// Replication (docs/replication.md): a shard whose replica set names this
// node after the primary is a backup here (created empty at epoch 1; kept
// at later epochs only if this process was its backup or primary at the
// previous one — a node added without a catch-up copy never serves as a
// backup); a backup the map promotes to primary is served (it holds every
// acknowledged write). The primary of a shard with backups forwards every
// commit to them (ReplicaForwarder) before acknowledging it, and reports a
// backup it cannot reach under failed-backups/ for the controller.
//
// Fencing: the ShardTable asks the membership whether the lease is alive
// before it admits, decides or acknowledges anything, so from the
// deadline on nothing is acknowledged. When the deadline passes without
// a renewed lease (etcd unreachable, the process stalled), the table is
// fenced and `on_fence` is called once from the membership's thread;
// kvserver then stops (exit 3, "fenced"): its process ending disconnects
// every session and takes the read registrations with it.
//
// Thread-safety: Start, Leave and the destructor from one thread;
// fenced() from any.
#ifndef KV_SERVER_CLUSTER_NODE_H_
#define KV_SERVER_CLUSTER_NODE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kv/status.h"
#include "shard_host.h"
#include "shard_table.h"

namespace kv::cluster {
class ClusterMap;
class Controller;
class EtcdHttp;
class MapWatcher;
class Membership;
}  // namespace kv::cluster

namespace kv::server {

class MoveManager;
class ReplicaForwarder;

class ClusterNode {
 public:
  struct Options {
    std::string etcd;          // "etcd://host:port[,host:port...]"
    std::string cluster_name;  // the etcd prefix /rpkv/<name>/
    uint32_t node_id = 0;      // 1..
    std::string address;       // host:port clients reach this node at
    std::chrono::seconds lease_ttl{5};
    // The controller's (kv::cluster::Controller::Options), when this node
    // is elected: rebalance live, and the moves in flight it may start.
    bool rebalance = true;
    uint32_t max_moves = 1;
    ShardTable* shards = nullptr;  // required; outlives the node
    // Makes sure the pool has shard keyspace `name` with `id`
    // (Server::EnsureShard); `share`: shards still to make in this round;
    // `create`: make it when missing (else not_found).
    std::function<Status(const std::string& name, uint32_t id, uint32_t share,
                         bool create)>
        ensure_shard;
    // Live shard moves (move_manager.h): the server's side of them. null:
    // this node takes part in no move.
    ShardHost* move_host = nullptr;
    std::string peer_key;  // kvserver --peer_key_file's; empty: none
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

  // From now on no map is applied (the server's shards are not touched),
  // commits waiting for backups fail and outgoing moves are stopped (their
  // forwarding detached): the server may go before this node's threads do
  // (the fenced shutdown). Waits for an Apply in flight.
  void Quiesce();

 private:
  explicit ClusterNode(Options options);
  // The map watcher's callback: serve what the map gives this node (also
  // called by the move manager after a cancelled hand-off).
  void Apply(const kv::cluster::ClusterMap& map, int64_t revision);
  void ApplyLocked(const kv::cluster::ClusterMap& map, int64_t revision);
  // Replication (docs/replication.md): the shards this node is a backup
  // of (ShardTable::SetBackups), and a ReplicaForwarder on the commit
  // point of every shard it is the primary of with backups.
  struct Backup {
    std::string name;
    uint32_t id;
    uint32_t epoch;
  };
  struct ReplicaSet {
    std::string keyspace;  // the cluster keyspace
    uint32_t shard = 0;
    std::vector<uint32_t> backups;
  };
  using ReplicaSets = std::map<std::string, ReplicaSet>;  // by shard name
  void ApplyBackups(const std::vector<Backup>& wanted,
                    const ShardTable::Owned& owned_before, int64_t revision);
  // Before the shards enter the table: their forwarders current.
  void InstallReplicas(const ShardTable::Owned& owned, const ReplicaSets& sets);
  // After: the forwarders of shards no longer owned gone.
  void RemoveReplicas(const ShardTable::Owned& owned);
  // The shard's commit point on this node's server, or null.
  ForwardingCommitPoint* CommitPointOf(const std::string& name);
  std::shared_ptr<ReplicaForwarder> MakeReplicaForwarder(
      const std::string& name, const ReplicaSet& set);

  const Options options_;
  std::unique_ptr<kv::cluster::EtcdHttp> etcd_;
  std::unique_ptr<kv::cluster::Membership> membership_;
  std::unique_ptr<kv::cluster::MapWatcher> watcher_;
  std::unique_ptr<kv::cluster::Controller> controller_;
  std::unique_ptr<MoveManager> moves_;
  std::mutex apply_mu_;           // one Apply at a time
  int64_t applied_revision_ = 0;  // of the map last applied; apply_mu_
  // Shard name -> its forwarder, while this node is its primary and it
  // has (had) backups; guarded by apply_mu_.
  std::map<std::string, std::shared_ptr<ReplicaForwarder>> replicas_;
  bool quiesced_ = false;  // guarded by apply_mu_
};

}  // namespace kv::server

#endif  // KV_SERVER_CLUSTER_NODE_H_
