// kv::server::ForwardingCommitPoint — the commit point of every cluster
// shard of this node (store/commit_point.h): the local persist, and while
// the shard moves out, "local persist + the copy on the target"
// (docs/cluster.md, "Moving a shard: the protocol", steps 2 and 4).
//
// Modes:
//  - no forwarder (the shard is not moving, has no backups): the local
//    persist, slots published before it (as LocalCommitPoint).
//  - replicas set (SetReplicas): strict; the records go to every backup
//    while the local persist runs (ForwardAround: one persist and one
//    round trip overlap; an error of either fails the commits), then to a
//    move's forwarder if one is attached.
//  - a forwarder attached: strict (a slot appears only after MakeDurable
//    returned ok, so a reader never sees a value that is not on the
//    target), and MakeDurable, after the local persist, hands every
//    record (ranges inside the keyspace's log; bucket ranges are not
//    records) to the forwarder in order. A copy that fails fails the
//    move, not the commit: the source stays the shard's owner, and a
//    failed move never reaches the hand-off.
//  - frozen (the hand-off): MakeDurable refuses everything with
//    wrong_shard. Freeze() returns once no MakeDurable is running, so
//    every commit that is or will be acknowledged is on the target.
//
// MakeDurable is called with the stripes of the keys it covers held (the
// pipeline holds them from decide to publish): the forwarder sees the
// commits of one key in their commit order.
//
// Thread-safety: every method from any thread. Lifetime: outlives the
// keyspace's commits (KeyspaceTable owns it).
#ifndef KV_SERVER_FORWARDING_COMMIT_POINT_H_
#define KV_SERVER_FORWARDING_COMMIT_POINT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>

#include "kv/status.h"
#include "kv/store/commit_point.h"

namespace kv::server {

// One committed record (sealed, as in the log).
struct ForwardedRecord {
  const uint8_t* data;
  size_t length;
};

// Where forwarded records go (a shard move's source). Called under the
// commit point's shared lock, possibly from several threads at once.
class Forwarder {
 public:
  virtual ~Forwarder() = default;
  // Copies the records, in order, to the target and returns once they are
  // durable there: ok, or why not. An error fails the commits
  // (MakeDurable returns it); a forwarder whose failure should not (a
  // move's: the source still owns the shard) records it and returns ok.
  virtual Status Forward(const ForwardedRecord* records, size_t n) = 0;
  // As Forward, and runs `local` (the local persist) once while the
  // records travel; its error fails the call too. Default: `local`, then
  // Forward.
  virtual Status ForwardAround(const ForwardedRecord* records, size_t n,
                               const std::function<Status()>& local) {
    KV_RETURN_IF_ERROR(local());
    return Forward(records, n);
  }
};

class ForwardingCommitPoint : public store::CommitPoint {
 public:
  // `log` and `log_size`: the keyspace's log (Keyspace::log_base(),
  // region().log_size); `persister`: the keyspace's.
  ForwardingCommitPoint(store::Persister* persister, const uint8_t* log,
                        uint64_t log_size);

  Status MakeDurable(const store::Persister::Range* ranges, size_t n) override;
  bool publish_before_durable() const override;

  // Starts forwarding (and the strict mode); replaces any forwarder and
  // lifts a freeze. Returns once no MakeDurable runs without it.
  void Attach(std::shared_ptr<Forwarder> forwarder);
  // Back to the local persist (a move cancelled or failed, or done).
  void Detach();
  // Replication (replica_forwarder.h): while set (this node the shard's
  // primary with backups), the strict mode, and every commit's records go
  // to `replicas` after the local persist — its error fails the commits.
  // null: none. Returns once no MakeDurable runs without it (a forwarder
  // being replaced must not be waiting for this call: Gone() it first).
  void SetReplicas(std::shared_ptr<Forwarder> replicas);
  // The hand-off: from now on every commit is refused (wrong_shard).
  void Freeze();
  bool frozen() const;

 private:
  store::LocalCommitPoint local_;
  const uint8_t* const log_;
  const uint64_t log_size_;
  mutable std::shared_mutex mu_;  // shared: MakeDurable; unique: changes
  std::shared_ptr<Forwarder> forwarder_;  // guarded by mu_
  std::shared_ptr<Forwarder> replicas_;   // guarded by mu_
  bool frozen_ = false;                   // guarded by mu_
};

}  // namespace kv::server

#endif  // KV_SERVER_FORWARDING_COMMIT_POINT_H_
