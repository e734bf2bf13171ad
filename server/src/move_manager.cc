#include "move_manager.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "kv/cluster/node_registration.h"
#include "kv/cluster_slots.h"
#include "kv/endpoint.h"
#include "kv/record_format.h"
#include "kv/store/writer.h"
#include "log.h"

namespace kv::server {
namespace {

using Clock = std::chrono::steady_clock;
using cluster::MovePhase;
using cluster::MoveRecord;

// A source that cannot reach its target gives up after this long.
constexpr auto kStartGiveUp = std::chrono::seconds(30);
constexpr auto kStartRetry = std::chrono::milliseconds(500);
constexpr auto kReportEvery = std::chrono::seconds(1);
constexpr auto kEndSessions = std::chrono::seconds(5);

uint64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct MoveManager::Read {
  std::optional<cluster::ClusterMap> map;
  std::map<uint32_t, std::string> addresses;  // node id -> host:port
  struct Entry {
    MoveRecord record;
    int64_t mod_revision = 0;
  };
  std::map<std::string, Entry> moves;  // by shard keyspace name
  int64_t revision = 0;                // etcd's, of this read
  int64_t map_revision = 0;            // the map's mod revision

  // The shard's primary and epoch in the map; {0, 0} when absent.
  std::pair<uint32_t, uint32_t> Owner(const std::string& keyspace,
                                      uint32_t shard) const {
    if (!map) return {0, 0};
    for (const cluster::KeyspaceShards& ks : map->keyspaces()) {
      if (ks.name != keyspace) continue;
      for (const cluster::Shard& s : ks.shards) {
        if (s.id == shard) return {s.primary(), s.epoch};
      }
    }
    return {0, 0};
  }
  uint32_t KeyspaceId(const std::string& keyspace) const {
    if (!map) return 0;
    for (const cluster::KeyspaceShards& ks : map->keyspaces()) {
      if (ks.name == keyspace) return ks.id;
    }
    return 0;
  }
};

MoveManager::MoveManager(cluster::Etcd& etcd, Options options,
                         cluster::EtcdKeys keys)
    : etcd_(etcd), options_(std::move(options)), keys_(std::move(keys)) {}

Result<std::unique_ptr<MoveManager>> MoveManager::Create(cluster::Etcd& etcd,
                                                         Options options) {
  if (options.shards == nullptr || options.host == nullptr ||
      options.node_id == 0) {
    return Status::InvalidArgument(
        "a move manager needs its node id, shard table and host");
  }
  Result<cluster::EtcdKeys> keys =
      cluster::EtcdKeys::ForCluster(options.cluster);
  if (!keys.ok()) return keys.status();
  return std::unique_ptr<MoveManager>(
      new MoveManager(etcd, std::move(options), std::move(keys).value()));
}

MoveManager::~MoveManager() { Stop(); }

void MoveManager::Run() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      Pass();
      lock.lock();
      wake_.wait_for(lock, options_.poll, [this] { return stop_; });
    }
  });
}

void MoveManager::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  out_.clear();  // not frozen: detached, the source serves alone
}

void MoveManager::Prime() {
  Result<cluster::Range> r = etcd_.GetPrefix(keys_.moves_prefix());
  if (!r.ok()) return;
  for (const cluster::KeyValue& kv : r->kvs) {
    Result<cluster::ShardRef> ref = keys_.MoveOf(kv.key);
    if (!ref.ok()) continue;
    Result<MoveRecord> rec =
        MoveRecord::Decode(ref->keyspace, ref->shard, kv.value);
    if (!rec.ok() || rec->source != options_.node_id) continue;
    if (rec->phase != MovePhase::kHandoff &&
        rec->phase != MovePhase::kReleased) {
      continue;
    }
    const std::string name = ShardKeyspaceName(rec->keyspace, rec->shard);
    options_.shards->Release(name);
    Logf(
        "move of '%s' to node %u was in %s when this node started: the "
        "shard stays released",
        name.c_str(), rec->target,
        std::string(cluster::MovePhaseName(rec->phase)).c_str());
    if (rec->phase == MovePhase::kHandoff) {
      Cancel(*rec, kv.mod_revision, "the source restarted during the hand-off");
    }
  }
}

void MoveManager::Pass() {
  Result<cluster::Range> r = etcd_.GetPrefix(keys_.prefix());
  if (!r.ok()) return;  // etcd unreachable: moves wait
  Read read;
  read.revision = r->revision;
  for (const cluster::KeyValue& kv : r->kvs) {
    if (kv.key == keys_.map()) {
      Result<cluster::ClusterMap> m = cluster::ClusterMap::Decode(kv.value);
      if (m.ok()) read.map = std::move(m).value();
      read.map_revision = kv.mod_revision;
    } else if (kv.key.starts_with(keys_.nodes_prefix())) {
      Result<uint32_t> id = keys_.NodeIdOf(kv.key);
      Result<cluster::NodeRegistration> reg =
          cluster::NodeRegistration::Decode(kv.value);
      if (id.ok() && reg.ok()) read.addresses[*id] = reg->address;
    } else if (kv.key.starts_with(keys_.moves_prefix())) {
      Result<cluster::ShardRef> ref = keys_.MoveOf(kv.key);
      if (!ref.ok()) continue;
      Result<MoveRecord> rec =
          MoveRecord::Decode(ref->keyspace, ref->shard, kv.value);
      if (!rec.ok()) continue;  // the controller reports bad records
      const std::string name = ShardKeyspaceName(rec->keyspace, rec->shard);
      read.moves[name] = {std::move(rec).value(), kv.mod_revision};
    }
  }
  if (!read.map) return;
  for (const auto& [name, e] : read.moves) {
    if (e.record.target == options_.node_id) Incoming(name, e.record, read);
    if (e.record.source == options_.node_id) {
      Outgoing(name, e.record, e.mod_revision, read);
    }
  }
  Finished(read);
}

Status MoveManager::Prepare(const std::string& name, const MoveRecord& r,
                            const Read& read) {
  const uint32_t ks_id = read.KeyspaceId(r.keyspace);
  if (ks_id == 0) {
    return Status::NotFound("keyspace '" + r.keyspace + "' is not in the map");
  }
  KV_RETURN_IF_ERROR(options_.host->EnsureShard(
      name, ShardKeyspaceId(ks_id, r.shard), 1, true));
  // A copy this node held before (a shard that moved away and back, an
  // earlier move that failed) is emptied: the copy starts from nothing.
  if (ForwardingCommitPoint* point = options_.host->ShardCommitPoint(name)) {
    point->Detach();
  }
  Result<std::shared_ptr<store::Keyspace>> ks =
      options_.host->LocalKeyspace(name);
  if (!ks.ok()) return ks.status();
  std::vector<std::string> old;
  KV_RETURN_IF_ERROR((*ks)->ForEach([&](const record_format::RecordView& v) {
    old.emplace_back(v.key);
    return true;
  }));
  store::Writer w(*ks);
  for (const std::string& key : old) KV_RETURN_IF_ERROR(w.Delete(key).status());
  if (!old.empty()) {
    Logf("move of '%s' here: emptied an older copy (%zu keys)", name.c_str(),
         old.size());
  }
  return Status::Ok();
}

void MoveManager::Incoming(const std::string& name, const MoveRecord& r,
                           const Read& read) {
  if (r.phase == MovePhase::kCancel) {
    if (options_.shards->IncomingEpoch(name) != 0) {
      options_.shards->RemoveIncoming(name);
      Logf("move of '%s' here cancelled: %s", name.c_str(), r.reason.c_str());
    }
    return;
  }
  if (options_.shards->IncomingEpoch(name) == r.epoch) return;  // prepared
  const auto [primary, epoch] = read.Owner(r.keyspace, r.shard);
  if (primary != r.source || epoch != r.epoch) return;  // stale or switched
  auto prepare = [&](int64_t applied) {
    // A read that started before the switch and ended after this node
    // applied it still shows the record and the old map: emptying then
    // would destroy the shard just moved here. CI's drain test did that.
    if (read.revision < applied) return;
    if (options_.shards->owned().count(name) != 0) return;
    Status st = Prepare(name, r, read);
    if (!st.ok()) {
      Logf("move of '%s' here from node %u: cannot prepare: %s", name.c_str(),
           r.source, st.ToString().c_str());
      return;
    }
    options_.shards->AddIncoming(name, r.epoch);
    Logf("move of '%s' here from node %u (epoch %u): receiving", name.c_str(),
         r.source, r.epoch);
  };
  if (options_.with_applied_map) {
    options_.with_applied_map(prepare);
  } else {
    prepare(0);
  }
}

void MoveManager::Outgoing(const std::string& name, const MoveRecord& r,
                           int64_t mod_revision, const Read& read) {
  const auto [primary, epoch] = read.Owner(r.keyspace, r.shard);
  if (primary != options_.node_id || epoch != r.epoch) return;  // not ours
  auto it = out_.find(name);
  if (r.phase == MovePhase::kCancel) {
    Abandon(name);
    Result<cluster::TxnResult> t = etcd_.Txn(
        {cluster::Compare::ModRevisionIs(keys_.move(r.keyspace, r.shard),
                                         mod_revision)},
        {cluster::TxnOp::Delete(keys_.move(r.keyspace, r.shard)),
         cluster::TxnOp::Delete(keys_.move_progress(r.keyspace, r.shard))},
        {});
    if (t.ok() && t->succeeded) {
      Logf("move of '%s' to node %u cancelled (%s); serving it here",
           name.c_str(), r.target, r.reason.c_str());
    }
    return;
  }
  if (r.phase == MovePhase::kReleased) return;  // the controller switches
  const auto now = Clock::now();
  if (it == out_.end() || it->second.source == nullptr) {
    if (r.phase == MovePhase::kHandoff) {
      Cancel(r, mod_revision, "the source has no copy in progress");
      return;
    }
    Out& o = out_[name];
    if (o.first_try == Clock::time_point()) o.first_try = now;
    if (now < o.next_try) return;
    o.next_try = now + kStartRetry;
    auto address = read.addresses.find(r.target);
    Status st = Status::Unavailable("node " + std::to_string(r.target) +
                                    " is not registered");
    if (address != read.addresses.end() && !options_.peer_key.empty()) {
      Result<Endpoint> target = Endpoint::Parse(address->second);
      Result<std::shared_ptr<store::Keyspace>> ks =
          options_.host->LocalKeyspace(name);
      st = !target.ok() ? target.status() : ks.status();
      if (st.ok()) {
        MoveSource::Options m;
        m.keyspace = *ks;
        m.commit_point = options_.host->ShardCommitPoint(name);
        m.link.target = *target;
        m.link.keyspace = name;
        m.link.peer_key = options_.peer_key;
        m.link.epoch = r.epoch;
        m.link.timeout = options_.link_timeout;
        m.paused = r.paused;
        m.rate_bytes_per_s = r.rate_bytes_per_s;
        Result<std::unique_ptr<MoveSource>> s = MoveSource::Start(std::move(m));
        st = s.status();
        if (s.ok()) {
          o.source = std::move(s).value();
          o.join = r.join;
          o.target = r.target;
          Logf("%s of '%s' to node %u (%s): copying", r.join ? "join" : "move",
               name.c_str(), r.target, address->second.c_str());
          return;
        }
      }
    } else if (options_.peer_key.empty()) {
      st = Status::InvalidArgument("this node has no --peer_key_file");
    }
    if (now - o.first_try > kStartGiveUp) {
      out_.erase(name);
      Cancel(r, mod_revision,
             "the source cannot reach the target: " + st.ToString());
    }
    return;
  }
  Out& o = it->second;
  o.source->SetPaused(r.paused);
  o.source->SetRate(r.rate_bytes_per_s);
  const MoveSource::Progress p = o.source->progress();
  if (now - o.reported >= kReportEvery) {
    o.reported = now;
    Report(name, r, p);
  }
  if (!p.failure.ok()) {
    Abandon(name);
    Cancel(r, mod_revision, p.failure.ToString());
    return;
  }
  if (r.phase == MovePhase::kCopy && p.copied) {
    MoveRecord next = r;
    next.phase = MovePhase::kReady;
    Write(next, mod_revision);
    return;
  }
  if (r.phase != MovePhase::kHandoff) return;
  if (!o.frozen) {
    Result<uint64_t> last = o.source->Freeze();
    if (!last.ok()) {
      if (last.status().code() == StatusCode::kBusy) return;  // not copied
      Abandon(name);
      Cancel(r, mod_revision, last.status().ToString());
      return;
    }
    o.frozen = true;
    // A join's source keeps the shard: its commits wait (frozen) until
    // the target is in the replica set, its sessions and reads go on.
    if (!r.join) options_.shards->Release(name);
  }
  // No connection may read it once the target takes writes.
  Status st = r.join ? Status::Ok()
                     : options_.host->EndShardSessions(name, kEndSessions);
  if (!st.ok()) {
    Logf("hand-off of '%s': %s (retrying)", name.c_str(),
         st.ToString().c_str());
    return;
  }
  MoveRecord next = r;
  next.phase = MovePhase::kReleased;
  Result<std::shared_ptr<store::Keyspace>> ks =
      options_.host->LocalKeyspace(name);
  next.last_sequence = ks.ok() ? (*ks)->LastSequence() : 0;
  Write(next, mod_revision);
  Logf("hand-off of '%s' to node %u: released (last sequence %llu)",
       name.c_str(), r.target,
       static_cast<unsigned long long>(next.last_sequence));
}

void MoveManager::Finished(const Read& read) {
  // Outgoing moves whose record is gone.
  for (auto it = out_.begin(); it != out_.end();) {
    const std::string name = it->first;
    if (read.moves.count(name) != 0) {
      ++it;
      continue;
    }
    // Switched: the map names another node; the shard stays released
    // and frozen, and its keyspace goes. Otherwise (deleted by hand, or
    // a cancel another node finished): served here again.
    bool switched = false;
    bool joined = false;  // a join's target is in the replica set
    for (const cluster::KeyspaceShards& ks : read.map->keyspaces()) {
      for (const cluster::Shard& s : ks.shards) {
        if (ShardKeyspaceName(ks.name, s.id) != name) continue;
        if (s.primary() != options_.node_id) switched = true;
        if (it->second.join && s.primary() == options_.node_id &&
            std::find(s.replicas.begin(), s.replicas.end(),
                      it->second.target) != s.replicas.end()) {
          joined = true;
        }
      }
    }
    if (it->second.join && joined && it->second.frozen && !switched) {
      // The new backup joined. Commits resume only once this node applied
      // that map (its replica forwarder then includes the target): until
      // then a commit acknowledged here would be on no copy of the target.
      bool applied = false;
      if (options_.with_applied_map) {
        options_.with_applied_map(
            [&](int64_t at) { applied = at >= read.map_revision; });
      } else {
        applied = true;
      }
      if (!applied) {
        ++it;
        continue;
      }
      it->second.source->EndJoin();
      it->second.source.reset();  // detaches: the freeze lifts
      Logf("join of '%s' done: the new backup is in the replica set",
           name.c_str());
      it = out_.erase(it);
      continue;
    }
    if (switched && it->second.frozen) {
      it->second.source.reset();  // stays frozen
      drop_[name] = true;
      Logf("shard '%s' is another node's now: dropping this copy",
           name.c_str());
      it = out_.erase(it);
    } else {
      ++it;
      Abandon(name);
    }
  }
  for (auto it = drop_.begin(); it != drop_.end();) {
    Status st = options_.host->DropShard(it->first);
    if (st.ok() || st.IsNotFound()) {
      Logf("dropped shard '%s' from this pool", it->first.c_str());
      it = drop_.erase(it);
    } else {
      ++it;  // busy: a handle held for a moment; next poll
    }
  }
  // Incoming shards whose record is gone, that the map does not give
  // this node: the move ended without it (ClusterNode::Apply takes over
  // those it does give).
  for (const auto& [name, epoch] : options_.shards->incoming()) {
    if (read.moves.count(name) != 0) continue;
    bool mine = false;  // its primary, or a backup (a join)
    for (const cluster::KeyspaceShards& ks : read.map->keyspaces()) {
      for (const cluster::Shard& s : ks.shards) {
        if (ShardKeyspaceName(ks.name, s.id) == name &&
            std::find(s.replicas.begin(), s.replicas.end(), options_.node_id) !=
                s.replicas.end()) {
          mine = true;
        }
      }
    }
    if (!mine) {
      options_.shards->RemoveIncoming(name);
      Logf("move of '%s' here ended without the switch", name.c_str());
    }
  }
}

void MoveManager::Abandon(const std::string& name) {
  auto it = out_.find(name);
  if (it != out_.end()) {
    if (it->second.source != nullptr && it->second.frozen) {
      it->second.source->Unfreeze();
    }
    it->second.source.reset();  // detaches: served alone again
    out_.erase(it);
  }
  if (options_.shards->released(name)) {
    options_.shards->Unrelease(name);
    if (options_.reapply) options_.reapply();
  }
}

void MoveManager::Write(const MoveRecord& r, int64_t mod_revision) {
  const std::string key = keys_.move(r.keyspace, r.shard);
  Result<cluster::TxnResult> t =
      etcd_.Txn({cluster::Compare::ModRevisionIs(key, mod_revision)},
                {cluster::TxnOp::Put(key, r.Encode())}, {});
  if (!t.ok() || !t->succeeded) {
    Logf("move of '%s'/%u: writing phase %s: %s", r.keyspace.c_str(), r.shard,
         std::string(cluster::MovePhaseName(r.phase)).c_str(),
         t.ok() ? "the record changed meanwhile (next poll)"
                : t.status().ToString().c_str());
  }
}

void MoveManager::Cancel(const MoveRecord& r, int64_t mod_revision,
                         const std::string& why) {
  MoveRecord next = r;
  next.phase = MovePhase::kCancel;
  next.reason = why.substr(0, 200);
  Logf("move of '%s'/%u to node %u fails: %s", r.keyspace.c_str(), r.shard,
       r.target, why.c_str());
  Write(next, mod_revision);
}

void MoveManager::Report(const std::string& name, const MoveRecord& r,
                         const MoveSource::Progress& p) {
  cluster::MoveProgress mp;
  mp.phase = r.phase;
  mp.keys_copied = p.keys_copied;
  mp.bytes_copied = p.bytes_copied;
  mp.keys_total = p.keys_total;
  mp.keys_forwarded = p.keys_forwarded;
  mp.updated_unix_ms = UnixMs();
  (void)etcd_.Put(keys_.move_progress(r.keyspace, r.shard), mp.Encode());
  (void)name;
}

}  // namespace kv::server
