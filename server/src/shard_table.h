// kv::server::ShardTable — which shards this cluster node serves now, and
// whether it may acknowledge anything at all (docs/cluster.md, "Serving
// shards" and "Fencing").
//
// A shard is a keyspace of this node's pool named and numbered from the
// map (kv/cluster_slots.h: "<keyspace>.s<shard>", ks_id*1024+shard). The
// ClusterNode's map watcher calls Set() with every shard whose primary is
// this node, and its epoch; admission, COMMIT and REFILL ask Check().
//
// Two things must hold for a yes: the shard is in the table at the
// request's epoch, and the node's lease is alive (SetLeaseCheck, i.e.
// Membership::Alive: now is before the fencing deadline). So from the
// deadline on nothing is admitted, decided or acknowledged, even before
// the fence callback has run; Fence() then empties the table for good.
//
// Outside a cluster there is no ShardTable (the server passes nullptr and
// checks nothing).
//
// Thread-safety: every method from any thread.
#ifndef KV_SERVER_SHARD_TABLE_H_
#define KV_SERVER_SHARD_TABLE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"

namespace kv::server {

class ShardTable {
 public:
  explicit ShardTable(uint32_t node_id);

  // How to tell that the lease is alive now (Membership::Alive). Until it
  // is set, the lease counts as dead: nothing is served.
  void SetLeaseCheck(std::function<bool()> lease_alive);

  // Pool keyspace name -> its epoch in the map this node acts on.
  using Owned = std::map<std::string, uint32_t, std::less<>>;
  // Replaces the owned shards (ignored once fenced). Returns the names
  // that were owned and are not now (for the log and for disconnecting).
  std::vector<std::string> Set(Owned owned);

  // ok when this node serves `name` now and its lease is alive; *epoch
  // (may be null) gets the shard's epoch. wrong_shard otherwise, saying
  // why (not owned, fenced, lease past its deadline).
  Status CheckAdmit(std::string_view name, uint32_t* epoch) const;
  // As CheckAdmit, and the request's map epoch must be the shard's:
  // wrong_shard naming both epochs otherwise.
  Status CheckRequest(std::string_view name, uint32_t request_epoch) const;
  // Shards this node receives a copy of from a peer kvserver (a move's
  // target, docs/cluster.md "Moving a shard: the protocol"): pool
  // keyspace name -> the map epoch the peer writes at. Replaces the set
  // (ignored once fenced). A shard is either owned or incoming.
  void SetIncoming(Owned incoming);
  void AddIncoming(const std::string& name, uint32_t epoch);
  void RemoveIncoming(std::string_view name);
  // The epoch `name` is incoming at; 0 when it is not.
  uint32_t IncomingEpoch(std::string_view name) const;
  Owned incoming() const;

  // Shards this node is a backup of (replication, docs/replication.md):
  // pool keyspace name -> the epoch of the map naming it a backup; the
  // primary's peer session writes at that epoch (CheckPeer). Replaces
  // the set (ignored once fenced).
  void SetBackups(Owned backups);
  // The epoch `name` is a backup at; 0 when it is not.
  uint32_t BackupEpoch(std::string_view name) const;
  Owned backups() const;

  // A move's source hands shard `name` off: it leaves the owned shards
  // and Set() does not take it back while the map still names this node
  // (until Unrelease: a cancelled hand-off, or the map moved on).
  void Release(const std::string& name);
  void Unrelease(std::string_view name);
  bool released(std::string_view name) const;
  // ok when `name` is incoming or a backup at `request_epoch` and the
  // lease is alive (a peer's HELLO and its replica COMMITs); wrong_shard
  // otherwise.
  Status CheckPeer(std::string_view name, uint32_t request_epoch) const;

  // The lease is alive and the node not fenced: an ok commit may be
  // acknowledged.
  bool MayAcknowledge() const;

  // The node is fenced: nothing is served from now on.
  void Fence();
  bool fenced() const;
  Owned owned() const;

 private:
  // `name` in `table` (owned_ or incoming_, read under mu_) and the lease
  // alive; `missing` completes "node N<missing> shard '<name>'".
  Status Look(const Owned& table, std::string_view missing,
              std::string_view name, uint32_t* epoch) const;

  const uint32_t node_id_;
  mutable std::mutex mu_;
  std::function<bool()> lease_alive_;            // guarded by mu_
  Owned owned_;                                  // guarded by mu_
  Owned incoming_;                               // guarded by mu_
  Owned backups_;                                // guarded by mu_
  std::set<std::string, std::less<>> released_;  // guarded by mu_
  bool fenced_ = false;                          // guarded by mu_
};

}  // namespace kv::server

#endif  // KV_SERVER_SHARD_TABLE_H_
