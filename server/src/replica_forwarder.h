// kv::server::ReplicaForwarder — a primary's commits reaching every backup
// of its shard before they are acknowledged (docs/replication.md, "The
// write path"). Plugged into the shard's ForwardingCommitPoint (strict
// mode: a slot is published only after Forward returned ok, so a reader of
// the primary never sees a value a failover could lose).
//
// ClusterNode keeps it current: Update(epoch, backups) with every map that
// names this node the shard's primary, Gone() when the map takes the shard
// away (or the node is fenced). Forward() sends the batch's records over
// one PeerLink per backup (opened at the shard's epoch when first needed,
// pipelined: one round trip per batch) and returns ok once every backup
// committed them.
//
// A backup that fails (unreachable, timed out, refused) is reported
// (Options::report: an etcd key the controller reads) and the commit
// WAITS for the replica set to change — the controller drops the backup
// and bumps the epoch — and then forwards the same records to the new
// set (a backup that has them already answers "stale": copies are
// idempotent). So a backup's death costs the writes a pause of about the
// detection time, not an error. A commit is refused as unknown-outcome
// (unavailable: it may be on some backup) when the shard leaves this node
// meanwhile or the wait passes Options::max_wait.
//
// A backup that refuses with wrong_shard is at another epoch than this
// node (one of the two has not applied the newest map yet): not reported;
// the commit waits for this node's epoch to move, or retries the link
// once the backup has caught up with the map.
//
// Thread-safety: every method from any thread. Forward may run on several
// threads at once (the commit point's shared lock); the caller holds the
// stripes of the keys it forwards, so one key's versions reach each link
// in order.
#ifndef KV_SERVER_REPLICA_FORWARDER_H_
#define KV_SERVER_REPLICA_FORWARDER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "forwarding_commit_point.h"
#include "kv/endpoint.h"
#include "kv/status.h"
#include "peer_link.h"

namespace kv::server {

class ReplicaForwarder : public Forwarder {
 public:
  struct Options {
    std::string keyspace;  // the shard's pool keyspace, "<ks>.s<shard>"
    std::string peer_key;  // kvserver --peer_key_file's
    std::chrono::milliseconds link_timeout{5000};
    // How long a commit waits for the replica set to change after a
    // backup failed (then: unavailable, outcome unknown).
    std::chrono::milliseconds max_wait{30000};
    // The address a node registered (etcd nodes/<id>); required.
    std::function<Result<Endpoint>(uint32_t node)> resolve;
    // A backup failed at `epoch` (the controller drops it). May be null.
    std::function<void(uint32_t epoch, uint32_t node, const Status& why)>
        report;
  };

  explicit ReplicaForwarder(Options options);
  ~ReplicaForwarder() override;

  // The shard's replica set as the map this node applied names it: this
  // node primary at `epoch`, `backups` the others. A new epoch drops the
  // links of the old one and wakes the commits waiting for it.
  void Update(uint32_t epoch, std::vector<uint32_t> backups);
  // The shard is no longer this node's: every waiting and later Forward
  // fails (unavailable, outcome unknown).
  void Gone();

  Status Forward(const ForwardedRecord* records, size_t n) override;
  // Runs `local` after the records are on their way to every backup and
  // before waiting for them.
  Status ForwardAround(const ForwardedRecord* records, size_t n,
                       const std::function<Status()>& local) override;

  struct State {
    uint32_t epoch = 0;
    std::vector<uint32_t> backups;
    std::vector<uint32_t> failed;  // at this epoch, reported
    uint64_t forwarded = 0;        // records forwarded (every backup)
  };
  State state() const;

 private:
  struct Backup {
    uint32_t node = 0;
    std::shared_ptr<PeerLink> link;  // null until first needed
  };
  // The links of the current epoch, opening the missing ones. A backup
  // that cannot be linked: *failed_node set, error returned.
  Status LinksLocked(
      std::vector<std::pair<uint32_t, std::shared_ptr<PeerLink>>>* links,
      uint32_t* failed_node);
  Status OpenLink(uint32_t node, uint32_t epoch,
                  std::shared_ptr<PeerLink>* link);
  // Records `node` failed at `epoch` (reports it once unless wrong_shard).
  void FailedLocked(uint32_t epoch, uint32_t node, const Status& why);
  Status Unknown(const std::string& why) const;

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint32_t epoch_ = 0;            // guarded by mu_
  bool gone_ = false;             // guarded by mu_
  std::vector<Backup> backups_;   // guarded by mu_
  std::vector<uint32_t> failed_;  // guarded by mu_: at epoch_
  // First wrong_shard of a backup at epoch_ (guarded by mu_).
  std::map<uint32_t, std::chrono::steady_clock::time_point> wrong_since_;
  uint64_t forwarded_ = 0;  // guarded by mu_
};

}  // namespace kv::server

#endif  // KV_SERVER_REPLICA_FORWARDER_H_
