// kv::cluster::MoveRecord / MoveProgress: a live shard move as etcd holds
// it (docs/cluster.md, "Moving a shard: the protocol").
//
//   /rpkv/<cluster>/moves/<keyspace>/<shard>      MoveRecord JSON
//   /rpkv/<cluster>/move-progress/<keyspace>/<shard>
//                                                 MoveProgress JSON, written
//                                                 by the source on its lease
//                                                 (etcd_keys.h builds and
//                                                 parses both keys)
//
// A join record (join: true) is the same protocol for a new backup of a
// replicated shard: the controller creates it for a shard with fewer
// replicas than its keyspace wants; at handoff the source freezes its
// commits but keeps the shard (no release, no sessions ended); the switch
// appends the target to the replica set at epoch + 1; the source
// unfreezes once it applied that map.
//
// Who writes what (every write a transaction guarded by the record's mod
// revision as read, and the map's where it matters):
//   kvadmin / controller   create the record (phase copy), guarded by the
//                          map revision: the shard's primary is `source`
//                          at `epoch`, `target` a live node that holds no
//                          replica of it, no record for that shard yet.
//   kvadmin                paused, rate_bytes_per_s; phase cancel (from
//                          copy, ready or handoff; from released only with
//                          --force while the target is not live: the
//                          source then serves the shard again from its
//                          own copy, which lacks nothing).
//   source node            copy -> ready (the copier is done);
//                          handoff -> released (+ last_sequence; the shard
//                          is frozen, its reads revoked, its sessions ended);
//                          deletes a cancel record once it tore down.
//   controller             ready -> handoff; released -> the switch: the map
//                          gives the shard to `target` at epoch + 1 and the
//                          record and its progress are deleted, in one
//                          transaction (guarded by the map's and the
//                          record's mod revisions); a record that is not
//                          released whose target died, or whose shard the
//                          map no longer has at `epoch` with `source` as
//                          primary -> cancel; one whose source died is
//                          deleted by the controller (the source's lease
//                          lapsed: it is fenced). A released record whose
//                          target died is left (the shard is unavailable
//                          until the target returns or a person cancels).
//                          Drains and rebalancing create records too
//                          (move_planner.h).
//   target node            reads only: it prepares (creates the empty shard
//                          keyspace, admits the source's peer session) while
//                          a record names it, and drops its partial copy
//                          when the record goes away without the map giving
//                          it the shard.
//
// Values come from etcd, which anyone with access can write: Decode trusts
// nothing and returns corruption naming what is wrong. Unknown members are
// ignored (a newer writer may add some); a newer "format" is refused.
//
// Thread-safety: values.
#ifndef KV_CLUSTER_MOVE_RECORD_H_
#define KV_CLUSTER_MOVE_RECORD_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::cluster {

enum class MovePhase {
  kCopy,      // forwarding live writes + copying existing keys
  kReady,     // the copy is complete; forwarding continues
  kHandoff,   // the source must freeze and release the shard
  kReleased,  // the source serves nothing of it; the switch may happen
  kCancel,    // tear down; the source deletes the record when done
};
std::string_view MovePhaseName(MovePhase p);  // "copy", "ready", ...
// The phase MovePhaseName names; invalid_argument for any other text.
Result<MovePhase> ParseMovePhase(std::string_view name);

struct MoveRecord {
  static constexpr int kFormat = 1;
  static constexpr size_t kMaxJsonBytes = 1024;
  static constexpr size_t kMaxReason = 200;

  std::string keyspace;  // ValidateClusterKeyspaceName (cluster_map.h)
  uint32_t shard = 0;    // 0..kMaxShardId
  uint32_t source = 0;   // node ids, 1.., source != target
  uint32_t target = 0;
  uint32_t epoch = 0;  // the shard's epoch when the move began (1..)
  MovePhase phase = MovePhase::kCopy;
  bool paused = false;            // the copier waits (forwarding goes on)
  uint64_t rate_bytes_per_s = 0;  // the copier's limit; 0: none
  uint64_t last_sequence = 0;     // released: the source's last sequence
  std::string reason;  // cancel: why (for status and logs), <= 200 bytes
  // A join (docs/replication.md, "A new backup"): the target catches up
  // as a move's target does, and the switch adds it to the replica set
  // as a backup instead of making it primary; the source stays primary.
  // Encoded only when true ("join": true).
  bool join = false;

  // invalid_argument naming the problem (bad name, shard id, node ids 0
  // or equal, epoch 0, a reason over kMaxReason bytes or with a byte
  // outside printable ASCII).
  Status Validate() const;
  // The value stored under moves/<keyspace>/<shard>:
  //   {"epoch":4,"format":1,"keyspace":"users","last_sequence":0,
  //    "paused":false,"phase":"copy","rate_bytes_per_s":0,"reason":"",
  //    "shard":3,"source":1,"target":2}
  // Precondition: Validate() is ok.
  std::string Encode() const;
  // corruption naming the problem ("move record 'users'/3: ...") for
  // anything but a valid record whose keyspace and shard are the ones the
  // key names: a value over kMaxJsonBytes or nested, not a JSON object, a
  // member missing or of the wrong type or range, an unknown phase, a
  // record Validate refuses. invalid_argument for a newer format.
  static Result<MoveRecord> Decode(std::string_view keyspace, uint32_t shard,
                                   std::string_view json);
  // "'users'/3", for messages.
  std::string Name() const;
  bool operator==(const MoveRecord&) const = default;
};

// What the source reports while it copies (at most once a second).
struct MoveProgress {
  static constexpr int kFormat = 1;
  static constexpr size_t kMaxJsonBytes = 512;

  MovePhase phase = MovePhase::kCopy;
  uint64_t keys_copied = 0;     // existing keys sent by the copier
  uint64_t bytes_copied = 0;    // their record bytes
  uint64_t keys_total = 0;      // the shard's keys when the copy began
  uint64_t keys_forwarded = 0;  // live commits forwarded since the start
  uint64_t updated_unix_ms = 0;

  // {"bytes_copied":..,"format":1,"keys_copied":..,"keys_forwarded":..,
  //  "keys_total":..,"phase":"copy","updated_unix_ms":..}
  std::string Encode() const;
  // corruption naming the problem ("move progress: ...": over
  // kMaxJsonBytes, nested, not an object, a member missing or not an
  // unsigned integer, an unknown phase); unknown members ignored;
  // invalid_argument for a newer format.
  static Result<MoveProgress> Decode(std::string_view json);
  bool operator==(const MoveProgress&) const = default;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_MOVE_RECORD_H_
