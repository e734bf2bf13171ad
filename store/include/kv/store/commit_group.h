// kv::store::CommitGroup — group commit: several commits of one writer
// made durable by one persist point (one msync on a page-granularity
// file, one fence on PMem) instead of one each.
//
// Add() commits like Keyspace::Commit, with one difference: a put that
// takes an empty slot (the common case) is applied in memory — readers
// may already see it, as they may see any commit shortly before its
// commit point — but is durable only after Finish(), which persists every
// such put's record and buckets at once and then clears their old slots.
// Nothing added may be acknowledged before Finish() returns. Paths with
// their own ordered persist points (deletes, in-place replacement) first
// Finish() the group, then run as Keyspace::Commit does.
//
// While a put waits for Finish(), the group holds its key's stripe lock,
// so no other commit (of any writer) and no cleaner move sees the key
// with two slots. Add() never blocks on a stripe while holding one: a
// stripe already in the group, or one another writer holds, finishes the
// group first. A crash before Finish() completes leaves each key of the
// group at its old version or its new one (recovery resolves by sequence,
// as for any interrupted commit).
//
// Seal or return a segment only after Finish() (Writer and kvserver do).
// Thread-safety: one group per writer thread; not thread-safe itself.
// Lifetime: the Keyspace outlives the group; the destructor Finish()es.
#ifndef KV_STORE_COMMIT_GROUP_H_
#define KV_STORE_COMMIT_GROUP_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "kv/store/segment.h"

namespace kv::store {

class CommitGroup {
 public:
  explicit CommitGroup(Keyspace* keyspace) : ks_(keyspace) {}
  ~CommitGroup() { Finish(); }
  CommitGroup(const CommitGroup&) = delete;
  CommitGroup& operator=(const CommitGroup&) = delete;

  // Errors as Keyspace::Commit. An ok result is final but, when
  // pending() grew, durable only after Finish().
  Result<CommitResult> Add(const CommitRequest& request);
  // The commit point of every put added since the last Finish(); releases
  // their stripes. Cheap when nothing is pending.
  void Finish();
  // Puts waiting for Finish().
  size_t pending() const { return deferred_.size(); }

 private:
  bool Holds(const std::mutex* m) const;

  Keyspace* const ks_;
  std::vector<Keyspace::Deferred> deferred_;
  std::vector<std::mutex*> locks_;  // held, one per deferred put
};

}  // namespace kv::store

#endif  // KV_STORE_COMMIT_GROUP_H_
