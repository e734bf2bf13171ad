// kvadmin's commands for live shard moves and drains (docs/cluster.md,
// "kvadmin cluster", "Moving a shard: the protocol"). They talk to etcd
// only: they write move records (move_record.h) and drain keys, and the
// controller and the nodes do the rest.
//
//   kvadmin --cluster=... cluster move KEYSPACE SHARD --to=NODE
//   kvadmin --cluster=... cluster move-pause|move-resume KEYSPACE SHARD
//   kvadmin --cluster=... cluster move-rate KEYSPACE SHARD BYTES_PER_S
//   kvadmin --cluster=... cluster move-cancel KEYSPACE SHARD [--force]
//   kvadmin --cluster=... cluster drain|undrain NODE
//
// Every write is an etcd transaction guarded by what the command read (the
// map's mod revision, the record's, the target's registration), re-read
// and re-checked when it loses a race (at most kMaxAttempts times).
//
// Exit codes (commands.h): 0 done, or nothing to change (said so: a move
// already paused, a node already draining); 1 refused (the message says
// why and what to do) or etcd failed; 2 usage errors are the caller's
// (main.cc parses the arguments).
//
// Thread-safety: one command at a time; `etcd` must outlive the call.
#ifndef KV_TOOLS_KVADMIN_CLUSTER_MOVE_COMMANDS_H_
#define KV_TOOLS_KVADMIN_CLUSTER_MOVE_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"

namespace kv::kvadmin {

inline constexpr int kMaxAttempts = 3;

// Creates the move record of `shard` (phase copy, source its primary,
// epoch its epoch) towards node `to`, guarded by the map's revision, the
// record key's absence and `to`'s registration. Refused (exit 1): no such
// keyspace or shard in the map, a move (or an undecodable record) of the
// shard exists, `to` is not a live node, holds the shard already, or is
// draining, the shard's primary is not live.
int ClusterMove(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                const cluster::ShardRef& shard, uint32_t to, std::ostream& out,
                std::ostream& err);

// One change of an existing move record, guarded by its mod revision.
struct MoveChange {
  std::optional<bool> paused;    // move-pause / move-resume
  std::optional<uint64_t> rate;  // move-rate (bytes/s; 0: no limit)
  bool cancel = false;           // move-cancel
  // move-cancel --force: also a released move, while its target is not
  // live (the shard is frozen on its source and nobody else can take it).
  bool force = false;
};
// Refused (exit 1): no move of that shard (or a record that does not
// decode), pause/resume/rate of a move in phase released or cancel, a
// cancel of a released move without --force or whose target is live.
// Nothing to change (exit 0): already paused / resumed / at that rate /
// being cancelled.
int ClusterMoveChange(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                      const cluster::ShardRef& shard, const MoveChange& change,
                      std::ostream& out, std::ostream& err);

// drain: writes drain/<node> (absent-guarded; the value is the request's
// unix ms, informational). Refused (exit 1) for a node neither registered
// nor named by the map. undrain: deletes it (moves already started go on).
// Already draining / not draining: exit 0, nothing changed.
int ClusterDrain(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                 uint32_t node, bool drain, std::ostream& out,
                 std::ostream& err);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_CLUSTER_MOVE_COMMANDS_H_
