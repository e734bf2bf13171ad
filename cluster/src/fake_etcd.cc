#include "kv/cluster/fake_etcd.h"

#include "etcd_checks.h"
#include "fake_etcd_state.h"
#include "fake_etcd_watch.h"

namespace kv::cluster {
namespace {

using Lock = std::unique_lock<std::mutex>;

Status Down() {
  return Status::Unavailable(
      "etcd (fake) is unavailable: SetUnavailable(true) was called");
}

Status NoLease(int64_t id) {
  return Status::NotFound("etcd (fake): lease " + std::to_string(id) +
                          " not found (expired or revoked)");
}

void Detach(FakeEtcdState& s, int64_t lease, const std::string& key) {
  auto it = s.leases.find(lease);  // gone when it is being revoked
  if (it != s.leases.end()) it->second.keys.erase(key);
}

// The writes below run under s.mu and at revision `rev` (the caller bumps
// s.revision once for all writes of one transaction).
void ApplyPut(FakeEtcdState& s, const TxnOp& op, int64_t rev) {
  KeyValue& kv = s.kvs[op.key];
  if (kv.create_revision == 0) {
    kv.key = op.key;
    kv.create_revision = rev;
  }
  if (kv.lease != 0 && kv.lease != op.lease) Detach(s, kv.lease, op.key);
  if (op.lease != 0) s.leases.at(op.lease).keys.insert(op.key);
  kv.value = op.value;
  kv.mod_revision = rev;
  kv.lease = op.lease;
  s.history.push_back({WatchEvent::Type::kPut, op.key, op.value, rev});
}

bool ApplyDelete(FakeEtcdState& s, const std::string& key, int64_t rev) {
  auto it = s.kvs.find(key);
  if (it == s.kvs.end()) return false;
  if (it->second.lease != 0) Detach(s, it->second.lease, key);
  s.kvs.erase(it);
  s.history.push_back({WatchEvent::Type::kDelete, key, {}, rev});
  return true;
}

// Applies `ops` at one new revision if any of them changes something.
void ApplyOps(FakeEtcdState& s, const std::vector<TxnOp>& ops) {
  const int64_t rev = s.revision + 1;
  bool changed = false;
  for (const TxnOp& op : ops) {
    if (op.type == TxnOp::Type::kPut) {
      ApplyPut(s, op, rev);
      changed = true;
    } else {
      changed |= ApplyDelete(s, op.key, rev);
    }
  }
  if (changed) {
    s.revision = rev;
    s.changed.notify_all();
  }
}

// etcd compares an absent key as one whose revisions are 0 and that has
// no value (a value compare on it fails).
bool Holds(const FakeEtcdState& s, const Compare& c) {
  auto it = s.kvs.find(c.key);
  const KeyValue* kv = it == s.kvs.end() ? nullptr : &it->second;
  switch (c.target) {
    case Compare::Target::kModRevision:
      return (kv ? kv->mod_revision : 0) == c.revision;
    case Compare::Target::kCreateRevision:
      return (kv ? kv->create_revision : 0) == c.revision;
    case Compare::Target::kValue:
      return kv != nullptr && kv->value == c.value;
  }
  return false;
}

}  // namespace

FakeEtcd::FakeEtcd() : FakeEtcd(Options()) {}
FakeEtcd::FakeEtcd(Options options)
    : s_(std::make_shared<FakeEtcdState>(options)) {}
FakeEtcd::~FakeEtcd() = default;

Result<Range> FakeEtcd::Get(std::string_view key) {
  KV_RETURN_IF_ERROR(CheckKey(key));
  Lock l(s_->mu);
  if (s_->down) return Down();
  Range r{s_->revision, {}};
  auto it = s_->kvs.find(std::string(key));
  if (it != s_->kvs.end()) r.kvs.push_back(it->second);
  return r;
}

Result<Range> FakeEtcd::GetPrefix(std::string_view prefix) {
  Lock l(s_->mu);
  if (s_->down) return Down();
  Range r{s_->revision, {}};
  for (auto it = s_->kvs.lower_bound(std::string(prefix));
       it != s_->kvs.end() && it->first.starts_with(prefix); ++it) {
    r.kvs.push_back(it->second);
  }
  return r;
}

Result<int64_t> FakeEtcd::Put(std::string_view key, std::string_view value,
                              int64_t lease) {
  Result<TxnResult> r =
      Txn({}, {TxnOp::Put(std::string(key), std::string(value), lease)}, {});
  if (!r.ok()) return r.status();
  return r->revision;
}

Result<DeleteResult> FakeEtcd::Delete(std::string_view key) {
  KV_RETURN_IF_ERROR(CheckKey(key));
  Lock l(s_->mu);
  if (s_->down) return Down();
  const int64_t before = s_->revision;
  ApplyOps(*s_, {TxnOp::Delete(std::string(key))});
  return DeleteResult{s_->revision, s_->revision != before};
}

Result<TxnResult> FakeEtcd::Txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure) {
  KV_RETURN_IF_ERROR(CheckTxn(compares, success, failure));
  Lock l(s_->mu);
  if (s_->down) return Down();
  bool ok = true;
  for (const Compare& c : compares) ok = ok && Holds(*s_, c);
  const std::vector<TxnOp>& ops = ok ? success : failure;
  for (const TxnOp& op : ops) {
    if (op.type == TxnOp::Type::kPut && op.lease != 0 &&
        !s_->leases.contains(op.lease)) {
      return NoLease(op.lease);
    }
  }
  ApplyOps(*s_, ops);
  return TxnResult{ok, s_->revision};
}

Result<Lease> FakeEtcd::LeaseGrant(int64_t ttl_s) {
  KV_RETURN_IF_ERROR(CheckTtl(ttl_s));
  Lock l(s_->mu);
  if (s_->down) return Down();
  const int64_t ttl = std::max(ttl_s, s_->options.min_lease_ttl_s);
  const int64_t id = s_->next_lease_id++;
  s_->leases[id] = FakeLease{ttl, s_->now + std::chrono::seconds(ttl), {}};
  return Lease{id, ttl};
}

Result<int64_t> FakeEtcd::LeaseKeepAlive(int64_t id) {
  KV_RETURN_IF_ERROR(CheckLeaseId(id));
  Lock l(s_->mu);
  if (s_->down) return Down();
  auto it = s_->leases.find(id);
  if (it == s_->leases.end()) return NoLease(id);
  it->second.deadline = s_->now + std::chrono::seconds(it->second.ttl_s);
  return it->second.ttl_s;
}

Status FakeEtcd::LeaseRevoke(int64_t id) {
  KV_RETURN_IF_ERROR(CheckLeaseId(id));
  Lock l(s_->mu);
  if (s_->down) return Down();
  auto it = s_->leases.find(id);
  if (it == s_->leases.end()) return NoLease(id);
  std::vector<TxnOp> deletes;
  for (const std::string& key : it->second.keys) {
    deletes.push_back(TxnOp::Delete(key));
  }
  s_->leases.erase(it);
  ApplyOps(*s_, deletes);
  return Status::Ok();
}

Status FakeEtcd::Compact(int64_t revision) {
  KV_RETURN_IF_ERROR(CheckCompactRevision(revision));
  Lock l(s_->mu);
  if (s_->down) return Down();
  if (revision > s_->revision) {
    return Status::InvalidArgument(
        "etcd (fake): compaction to revision " + std::to_string(revision) +
        " is in the future (now " + std::to_string(s_->revision) + ")");
  }
  if (revision <= s_->compacted) {
    return Status::NotFound("etcd (fake): revision " +
                            std::to_string(revision) +
                            " has been compacted already");
  }
  s_->compacted = revision;
  s_->changed.notify_all();
  return Status::Ok();
}

Result<std::unique_ptr<EtcdWatch>> FakeEtcd::Watch(std::string_view prefix,
                                                   int64_t start_revision) {
  KV_RETURN_IF_ERROR(CheckStartRevision(start_revision));
  return std::unique_ptr<EtcdWatch>(
      new FakeEtcdWatch(s_, std::string(prefix), start_revision));
}

void FakeEtcd::AdvanceClock(std::chrono::milliseconds by) {
  Lock l(s_->mu);
  s_->now += by;
  for (auto it = s_->leases.begin(); it != s_->leases.end();) {
    if (it->second.deadline > s_->now) {
      ++it;
      continue;
    }
    std::vector<TxnOp> deletes;
    for (const std::string& key : it->second.keys) {
      deletes.push_back(TxnOp::Delete(key));
    }
    it = s_->leases.erase(it);
    ApplyOps(*s_, deletes);
  }
}

void FakeEtcd::SetUnavailable(bool down) {
  Lock l(s_->mu);
  s_->down = down;
  s_->changed.notify_all();
}

void FakeEtcd::HoldWatches(bool held) {
  Lock l(s_->mu);
  s_->watches_held = held;
  s_->changed.notify_all();
}

void FakeEtcd::BreakWatchStreams() {
  Lock l(s_->mu);
  ++s_->stream_epoch;
  s_->changed.notify_all();
}

int64_t FakeEtcd::revision() const {
  Lock l(s_->mu);
  return s_->revision;
}

}  // namespace kv::cluster
