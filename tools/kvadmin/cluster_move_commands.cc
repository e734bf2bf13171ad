// The move and drain commands: read the cluster at one revision, check
// the request against it, write one guarded transaction; a lost race
// means read and check again (the second look usually names what
// changed: another move of the shard, a node that left).
#include "cluster_move_commands.h"

#include <algorithm>
#include <chrono>
#include <ostream>

#include "cluster_view.h"
#include "commands.h"

namespace kv::kvadmin {
namespace {

using cluster::Compare;
using cluster::MovePhase;
using cluster::MoveRecord;
using cluster::ShardRef;
using cluster::TxnOp;

std::string Name(const ShardRef& s) {
  return s.keyspace + "/" + std::to_string(s.shard);
}

std::string Node(uint32_t n) { return "node " + std::to_string(n); }

bool Unreadable(const ClusterView& v, const ShardRef& s) {
  return std::find(v.unreadable_moves.begin(), v.unreadable_moves.end(), s) !=
         v.unreadable_moves.end();
}

int Refuse(std::ostream& err, const std::string& why) {
  err << "kvadmin: " << why << " (nothing changed)\n";
  return kExitFailed;
}

int LostRaces(std::ostream& err, const std::string& what) {
  err << "kvadmin: " << what << " changed under kvadmin " << kMaxAttempts
      << " times in a row; nothing written, run the command again\n";
  return kExitFailed;
}

// The checks of `cluster move` on one view. Returns the record to create,
// or the refusal's message in *why.
std::optional<MoveRecord> PlanMove(const ClusterView& v, const ShardRef& ref,
                                   uint32_t to, std::string* why) {
  const cluster::KeyspaceShards* ks =
      v.map ? v.map->Find(ref.keyspace) : nullptr;
  if (ks == nullptr) {
    *why = "the cluster map has no keyspace '" + ref.keyspace +
           "' (kvadmin cluster status lists them)";
    return std::nullopt;
  }
  auto s =
      std::find_if(ks->shards.begin(), ks->shards.end(),
                   [&](const cluster::Shard& x) { return x.id == ref.shard; });
  if (s == ks->shards.end()) {
    *why = "keyspace '" + ref.keyspace + "' has no shard " +
           std::to_string(ref.shard) + " (it has " +
           std::to_string(ks->shards.size()) + ")";
    return std::nullopt;
  }
  if (const MoveView* m = v.FindMove(ref.keyspace, ref.shard)) {
    *why = "a move of " + Name(ref) + " exists already (" +
           Node(m->record.source) + " -> " + Node(m->record.target) +
           ", phase " + std::string(cluster::MovePhaseName(m->record.phase)) +
           "); kvadmin cluster move-cancel " + ref.keyspace + " " +
           std::to_string(ref.shard) + " ends it";
    return std::nullopt;
  }
  if (Unreadable(v, ref)) {
    *why = "the move record of " + Name(ref) +
           " does not decode (kvadmin cluster status shows why); delete it "
           "with etcdctl first";
    return std::nullopt;
  }
  if (!v.live.contains(to)) {
    *why = Node(to) +
           " is not a live node (not registered; kvadmin cluster status "
           "lists the nodes)";
    return std::nullopt;
  }
  if (s->primary() == to) {
    *why = Node(to) + " is the primary of " + Name(ref) + " already";
    return std::nullopt;
  }
  if (std::find(s->replicas.begin(), s->replicas.end(), to) !=
      s->replicas.end()) {
    *why = Node(to) + " holds a replica of " + Name(ref) + " already";
    return std::nullopt;
  }
  if (v.draining.contains(to)) {
    *why = Node(to) +
           " is draining: it takes no shards (kvadmin cluster "
           "undrain " +
           std::to_string(to) + " first)";
    return std::nullopt;
  }
  if (!v.live.contains(s->primary())) {
    *why = "the primary of " + Name(ref) + ", " + Node(s->primary()) +
           ", is not live: a move needs its source to copy from";
    return std::nullopt;
  }
  MoveRecord r;
  r.keyspace = ref.keyspace;
  r.shard = ref.shard;
  r.source = s->primary();
  r.target = to;
  r.epoch = s->epoch;
  r.phase = MovePhase::kCopy;
  return r;
}

// The record after `change`, or nullopt with the refusal (exit 1) or the
// "nothing to change" note (exit 0) in *why / *code.
std::optional<MoveRecord> Changed(const ClusterView& v, const MoveView& m,
                                  const MoveChange& c, std::string* why,
                                  int* code) {
  MoveRecord r = m.record;
  const std::string name = Name({r.keyspace, r.shard});
  const std::string phase(cluster::MovePhaseName(r.phase));
  *code = kExitFailed;
  if (c.cancel) {
    if (r.phase == MovePhase::kCancel) {
      *code = kExitOk;
      *why = "the move of " + name + " is being cancelled already (" +
             r.reason + ")";
      return std::nullopt;
    }
    if (r.phase == MovePhase::kReleased) {
      if (!c.force) {
        *why = "the move of " + name +
               " is released: its source handed the "
               "shard off and the controller switches it to " +
               Node(r.target) +
               ". If that node is gone for good, "
               "--force cancels while it is not live";
        return std::nullopt;
      }
      if (v.live.contains(r.target)) {
        *why = "the move of " + name + " is released and its target " +
               Node(r.target) + " is live: the controller switches it";
        return std::nullopt;
      }
    }
    r.phase = MovePhase::kCancel;
    r.reason = "cancelled by kvadmin";
    if (c.force)
      r.reason +=
          " (--force: target node " + std::to_string(r.target) + " not live)";
    return r;
  }
  if (r.phase == MovePhase::kCancel || r.phase == MovePhase::kReleased) {
    *why = "the move of " + name + " is " + phase +
           ": its copier is done, nothing to " +
           (c.rate                     ? "limit"
            : c.paused.value_or(false) ? "pause"
                                       : "resume");
    return std::nullopt;
  }
  if (c.paused && *c.paused == r.paused) {
    *code = kExitOk;
    *why = "the move of " + name + " is " +
           (r.paused ? "paused" : "not paused") + " already";
    return std::nullopt;
  }
  if (c.rate && *c.rate == r.rate_bytes_per_s) {
    *code = kExitOk;
    *why = "the move of " + name + " has the rate " +
           RateText(r.rate_bytes_per_s) + " already";
    return std::nullopt;
  }
  if (c.paused) r.paused = *c.paused;
  if (c.rate) r.rate_bytes_per_s = *c.rate;
  return r;
}

std::string Done(const MoveRecord& r, const MoveChange& c) {
  const std::string name = Name({r.keyspace, r.shard});
  if (c.cancel) {
    return "cancel of the move of " + name + " requested: " + Node(r.source) +
           " tears down and deletes the record, " + Node(r.target) +
           " drops its partial copy; kvadmin cluster status shows it until "
           "then";
  }
  if (c.paused) {
    return *c.paused ? "the move of " + name +
                           " is paused: the copier waits, writes are still "
                           "forwarded to " +
                           Node(r.target)
                     : "the move of " + name + " goes on";
  }
  return "the move of " + name + " copies at most " +
         RateText(r.rate_bytes_per_s);
}

}  // namespace

int ClusterMove(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                const ShardRef& ref, uint32_t to, std::ostream& out,
                std::ostream& err) {
  const std::string key = keys.move(ref.keyspace, ref.shard);
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    Result<ClusterView> v = ReadClusterView(etcd, keys);
    if (!v.ok()) return Fail(err, v.status());
    if (!v->map_error.ok()) return ReportMapUnreadable(*v, keys, err);
    std::string why;
    std::optional<MoveRecord> r = PlanMove(*v, ref, to, &why);
    if (!r) return Refuse(err, why);
    // The shard's primary and epoch as read, no other move of it, the
    // target still registered (the same lease).
    Result<cluster::TxnResult> t = etcd.Txn(
        {Compare::ModRevisionIs(keys.map(), v->map_revision),
         Compare::Absent(key),
         Compare::ModRevisionIs(keys.node(to), v->live_revision.at(to))},
        {TxnOp::Put(key, r->Encode())}, {});
    if (!t.ok()) return Fail(err, t.status());
    if (!t->succeeded) continue;  // re-read: the checks say what changed
    out << "moving " << Name(ref) << " from " << Node(r->source) << " to "
        << Node(to) << " (epoch " << r->epoch << "): the record is " << key
        << "; kvadmin cluster status shows its progress\n";
    return kExitOk;
  }
  return LostRaces(err, "the map, the moves or node " + std::to_string(to));
}

int ClusterMoveChange(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                      const ShardRef& ref, const MoveChange& change,
                      std::ostream& out, std::ostream& err) {
  const std::string key = keys.move(ref.keyspace, ref.shard);
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    Result<ClusterView> v = ReadClusterView(etcd, keys);
    if (!v.ok()) return Fail(err, v.status());
    const MoveView* m = v->FindMove(ref.keyspace, ref.shard);
    if (m == nullptr) {
      if (Unreadable(*v, ref)) {
        return Refuse(err, "the move record " + key +
                               " does not decode (kvadmin cluster status "
                               "shows why); fix or delete it with etcdctl");
      }
      return Refuse(err, "there is no move of " + Name(ref) +
                             " (kvadmin cluster status lists the moves)");
    }
    std::string why;
    int code = kExitFailed;
    std::optional<MoveRecord> r = Changed(*v, *m, change, &why, &code);
    if (!r) {
      if (code == kExitOk) {
        out << "kvadmin: " << why << " (nothing changed)\n";
        return kExitOk;
      }
      return Refuse(err, why);
    }
    Result<cluster::TxnResult> t =
        etcd.Txn({Compare::ModRevisionIs(key, m->mod_revision)},
                 {TxnOp::Put(key, r->Encode())}, {});
    if (!t.ok()) return Fail(err, t.status());
    if (!t->succeeded) continue;  // a node or the controller moved it on
    out << "kvadmin: " << Done(*r, change) << "\n";
    return kExitOk;
  }
  return LostRaces(err, "the move record " + key);
}

int ClusterDrain(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                 uint32_t node, bool drain, std::ostream& out,
                 std::ostream& err) {
  const std::string key = keys.drain(node);
  if (!drain) {
    Result<cluster::DeleteResult> d = etcd.Delete(key);
    if (!d.ok()) return Fail(err, d.status());
    if (!d->deleted) {
      out << "kvadmin: " << Node(node)
          << " was not draining (nothing changed)\n";
    } else {
      out << "kvadmin: " << Node(node)
          << " no longer drains; moves already started go on (kvadmin "
             "cluster move-cancel stops one)\n";
    }
    return kExitOk;
  }
  Result<ClusterView> v = ReadClusterView(etcd, keys);
  if (!v.ok()) return Fail(err, v.status());
  if (!v->map_error.ok()) return ReportMapUnreadable(*v, keys, err);
  bool in_map = false;
  if (v->map) {
    for (const auto& ks : v->map->keyspaces()) {
      for (const auto& s : ks.shards) {
        in_map |= std::find(s.replicas.begin(), s.replicas.end(), node) !=
                  s.replicas.end();
      }
    }
  }
  if (!v->live.contains(node) && !in_map) {
    return Refuse(err, Node(node) +
                           " is neither registered nor named by the map: "
                           "nothing to drain");
  }
  const std::string since =
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
  Result<cluster::TxnResult> t =
      etcd.Txn({Compare::Absent(key)}, {TxnOp::Put(key, since)}, {});
  if (!t.ok()) return Fail(err, t.status());
  if (!t->succeeded) {
    out << "kvadmin: " << Node(node)
        << " is draining already (nothing changed)\n";
    return kExitOk;
  }
  const size_t left = v->PrimariesOf(node);
  out << "kvadmin: " << Node(node) << " drains: the controller moves its "
      << left << (left == 1 ? " shard" : " shards")
      << " to other live nodes, a few at a time, and moves none to it; "
         "kvadmin cluster status shows the moves; kvadmin cluster undrain "
      << node << " stops it\n";
  bool elsewhere = false;
  for (const auto& [id, address] : v->live) {
    elsewhere |= id != node && !v->draining.contains(id);
  }
  if (left > 0 && !elsewhere) {
    err << "kvadmin: warning: no other live node that is not draining: its "
           "shards stay until one joins\n";
  }
  if (!v->live.contains(node) && left > 0) {
    err << "kvadmin: warning: " << Node(node)
        << " is not live: its shards move only once it is back (a move "
           "copies from it)\n";
  }
  return kExitOk;
}

}  // namespace kv::kvadmin
