#include "kv/store/commit_group.h"

#include <algorithm>

namespace kv::store {

bool CommitGroup::Holds(const std::mutex* m) const {
  return std::find(locks_.begin(), locks_.end(), m) != locks_.end();
}

Result<CommitResult> CommitGroup::Add(const CommitRequest& r) {
  Result<Keyspace::Prepared> p = ks_->PrepareCommit(r);
  if (!p.ok()) return p.status();
  std::mutex& stripe = ks_->StripeFor(p->home);
  // The key's stripe is ours already (same stripe twice): its pending put
  // must reach its commit point first, so that a key never has two
  // pending versions.
  if (Holds(&stripe)) Finish();
  std::unique_lock<std::mutex> lock(stripe, std::defer_lock);
  // Never wait for a stripe while holding others (two groups, or a group
  // and the cleaner, would deadlock): finish, then wait holding nothing.
  if (locks_.empty() || !lock.try_lock()) {
    Finish();
    lock.lock();
  }
  Keyspace::Deferred d;
  bool deferred = false;
  Result<CommitResult> res = ks_->CommitLocked(
      r, *p, [this] { Finish(); }, &d, &deferred);
  if (deferred) {
    deferred_.push_back(d);
    locks_.push_back(lock.release());
  }
  return res;
}

void CommitGroup::Finish() {
  if (deferred_.empty()) return;
  ks_->CompleteDeferred(deferred_.data(), deferred_.size());
  for (std::mutex* m : locks_) m->unlock();
  deferred_.clear();
  locks_.clear();
}

}  // namespace kv::store
