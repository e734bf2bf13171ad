// kv::server::MoveManager — this node's part in live shard moves
// (docs/cluster.md, "Moving a shard: the protocol"). Every `poll` it reads
// the cluster's keys at one etcd revision (the map, the registrations,
// the move records) and acts on the records that name this node:
//
//  as the target: while a record names it (phase copy .. released), the
//    shard's keyspace exists here, emptied of any older copy (never one
//    this node serves, never on a read older than the map it applied),
//    and the
//    ShardTable lists it as incoming at the move's epoch, so the source's
//    peer session may write the copy. A cancelled or deleted record whose
//    shard the map does not give to this node ends that (ClusterNode::
//    Apply takes the shard over when the map gives it: the switch).
//  a join (MoveRecord::join: a new backup of a replicated shard) runs
//    the same way up to the hand-off, where the source freezes its
//    commits but keeps the shard (no release, sessions go on); when the
//    record is gone and the map has the target in the replica set, the
//    freeze lifts once this node applied that map.
//  as the source: a MoveSource per record (link to the target's
//    registered address, forwarding, copier), paused and rate-limited as
//    the record says; copy -> ready when the copier is done; at handoff:
//    Freeze, release the shard from the ShardTable, end its sessions,
//    then released (+ the last sequence); at cancel, or when the move
//    failed: tear down (the shard is served here again) and delete the
//    record. After the switch (the record gone, the map naming the
//    target) the shard's keyspace is dropped from this pool. Progress
//    goes to move-progress/ about once a second.
//
// Every record write is a transaction guarded by the record's mod
// revision as read; a lost race is retried on the next poll.
//
// At start (Prime, before the map is applied): a record of this node as
// source in phase handoff or released means this process was restarted
// mid hand-off: its shard stays released (not served), and a handoff one
// is cancelled (the copy can no longer be known complete).
//
// Thread-safety: Start/Prime/the destructor from one thread; the rest
// runs on the manager's thread.
#ifndef KV_SERVER_MOVE_MANAGER_H_
#define KV_SERVER_MOVE_MANAGER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "forwarding_commit_point.h"
#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/move_record.h"
#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "move_source.h"
#include "shard_host.h"
#include "shard_table.h"

namespace kv::server {

class MoveManager {
 public:
  using Host = ShardHost;

  struct Options {
    std::string cluster;
    uint32_t node_id = 0;
    ShardTable* shards = nullptr;  // required
    Host* host = nullptr;          // required
    std::string peer_key;          // empty: this node cannot be a source
    std::chrono::milliseconds poll{100};
    std::chrono::milliseconds link_timeout{5000};
    // Applies the current map again (ClusterNode): a cancelled hand-off
    // gives the shard back to this node without a map change.
    std::function<void()> reapply;
    // Runs `f` with no map being applied meanwhile (ClusterNode's apply
    // lock), passing the etcd revision of the map last applied. A target
    // prepares under it: a read older than that map is stale (it may
    // show a move that has switched since), and a shard this node serves
    // is never emptied. null: `f(0)` directly (tests without a node).
    std::function<void(const std::function<void(int64_t applied)>& f)>
        with_applied_map;
  };

  static Result<std::unique_ptr<MoveManager>> Create(cluster::Etcd& etcd,
                                                     Options options);
  ~MoveManager();  // Stop()

  // The first pass, before the map is applied (see above).
  void Prime();
  // Starts the polling thread.
  void Run();
  // Stops the thread; outgoing moves not yet frozen are torn down.
  void Stop();

  // One poll (tests, and the thread).
  void Pass();

 private:
  struct Read;  // one snapshot of the cluster's keys
  MoveManager(cluster::Etcd& etcd, Options options, cluster::EtcdKeys keys);
  void Incoming(const std::string& name, const cluster::MoveRecord& r,
                const Read& read);
  void Outgoing(const std::string& name, const cluster::MoveRecord& r,
                int64_t mod_revision, const Read& read);
  void Finished(const Read& read);
  // Writes `r` (a phase change) guarded by `mod_revision`.
  void Write(const cluster::MoveRecord& r, int64_t mod_revision);
  void Cancel(const cluster::MoveRecord& r, int64_t mod_revision,
              const std::string& why);
  void Report(const std::string& name, const cluster::MoveRecord& r,
              const MoveSource::Progress& p);
  Status Prepare(const std::string& name, const cluster::MoveRecord& r,
                 const Read& read);
  // Tears an outgoing move down and serves the shard here again.
  void Abandon(const std::string& name);

  cluster::Etcd& etcd_;
  const Options options_;
  const cluster::EtcdKeys keys_;

  struct Out {
    std::unique_ptr<MoveSource> source;
    bool frozen = false;
    bool join = false;  // a new backup's catch-up (MoveRecord::join)
    uint32_t target = 0;
    std::chrono::steady_clock::time_point next_try;  // Start retries
    std::chrono::steady_clock::time_point first_try;
    std::chrono::steady_clock::time_point reported;
  };
  std::map<std::string, Out> out_;    // manager thread only
  std::map<std::string, bool> drop_;  // switched away: drop pending
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace kv::server

#endif  // KV_SERVER_MOVE_MANAGER_H_
