// kv::server::MoveSource — the source's side of one live shard move
// (docs/cluster.md, "Moving a shard: the protocol", steps 2-4): a
// PeerLink to the target, the shard's commit point forwarding every
// commit over it (ForwardingCommitPoint), and a copier thread that sends
// every key's current record over the same link, each read under the
// key's stripe (Keyspace::WithCurrentRecord) so that a delete can never
// overtake the copy of the put it deletes.
//
// Start(): link, then forwarding, then the copier (in that order: a key
// written after the copier listed the keys is forwarded). The copier
// lists the live keys, then copies them one by one — waiting while
// paused, and at most `rate` bytes per second when set — and is done when
// every listed key was copied (or had gone). A failed copy or forward
// fails the move: forwarding stops, the source keeps serving the shard
// as before, and the move never reaches the hand-off.
//
// Freeze() is the hand-off: the commit point refuses every commit from
// then on (wrong_shard) and returns once none is in flight, so that every
// acknowledged commit is on the target; it fails when the move failed or
// the copy is not complete. Unfreeze() undoes it (a cancelled hand-off).
// The destructor stops the copier and detaches the commit point, unless
// the shard was frozen (it is the target's then, or about to be).
//
// Thread-safety: every method from any thread; Start and the destructor
// from one.
#ifndef KV_SERVER_MOVE_SOURCE_H_
#define KV_SERVER_MOVE_SOURCE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "forwarding_commit_point.h"
#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "peer_link.h"

namespace kv::server {

class MoveSource {
 public:
  struct Options {
    std::shared_ptr<store::Keyspace> keyspace;      // the shard, on this node
    ForwardingCommitPoint* commit_point = nullptr;  // the shard's
    PeerLink::Options link;
    bool paused = false;
    uint64_t rate_bytes_per_s = 0;  // 0: no limit
  };
  // Errors: invalid_argument (no keyspace or commit point); PeerLink's.
  static Result<std::unique_ptr<MoveSource>> Start(Options options);
  ~MoveSource();
  MoveSource(const MoveSource&) = delete;
  MoveSource& operator=(const MoveSource&) = delete;

  struct Progress {
    uint64_t keys_total = 0;   // live keys when the copier listed them
    uint64_t keys_copied = 0;  // sent by the copier (gone keys included)
    uint64_t bytes_copied = 0;
    uint64_t keys_forwarded = 0;  // commits forwarded
    bool copied = false;          // the copier is done
    Status failure;               // not ok: the move failed
  };
  Progress progress() const;

  void SetPaused(bool paused);
  void SetRate(uint64_t bytes_per_s);

  // The hand-off. Returns the shard's last sequence. Errors: the move's
  // failure; busy when the copy is not complete (nothing frozen then).
  Result<uint64_t> Freeze();
  void Unfreeze();
  // A join is done (the target is a backup now): the destructor then
  // detaches the commit point, which lifts the freeze.
  void EndJoin();

 private:
  class LinkForwarder;
  explicit MoveSource(Options options);
  void Copy();
  void Fail(const Status& why);
  // Waits while paused and for the rate's budget; false when stopping.
  bool Pace(uint64_t bytes);

  Options options_;
  std::shared_ptr<PeerLink> link_;
  std::shared_ptr<LinkForwarder> forwarder_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool stop_ = false;    // guarded by mu_
  bool frozen_ = false;  // guarded by mu_
  Progress progress_;    // guarded by mu_ (keys_forwarded: the forwarder's)
  std::thread copier_;
};

}  // namespace kv::server

#endif  // KV_SERVER_MOVE_SOURCE_H_
