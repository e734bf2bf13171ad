// kv::store::Writer — a local writer: appends records to its own granted
// segment and commits them, exactly as a remote client does through
// kvserver (write record, make it durable, commit). Used by kvadmin, the
// benchmark and tests.
//
// Thread-safety: one Writer per thread (it owns one segment grant); any
// number of Writers may work on one keyspace in parallel.
// Lifetime: holds a shared_ptr to its Keyspace; destroy before the Pool.
#ifndef KV_STORE_WRITER_H_
#define KV_STORE_WRITER_H_

#include <memory>
#include <string_view>

#include "kv/status.h"
#include "kv/store/commit_group.h"
#include "kv/store/keyspace.h"
#include "kv/store/segment.h"

namespace kv::store {

class Writer {
 public:
  explicit Writer(std::shared_ptr<Keyspace> keyspace);
  // Commits through `group` (group commit): a put is durable only after
  // group->Finish() (commit_group.h). The group outlives the Writer.
  Writer(std::shared_ptr<Keyspace> keyspace, CommitGroup* group);
  ~Writer();  // returns the segment
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Durable put: when it returns ok the value survives a crash (with a
  // group: once the group is Finish()ed). Errors:
  // invalid_argument (key not 1..1024 bytes, value over the keyspace's
  // max), no_space (log or index full; the Writer never runs the cleaner —
  // call Keyspace::Clean and retry), and whatever Commit returns.
  // With a condition (Commit's), condition_failed when it does not hold.
  Result<CommitResult> Put(std::string_view key, std::string_view value,
                           Condition condition = Condition::kNone,
                           uint64_t expected_sequence = 0);
  // Durable delete (a tombstone record, then the slot is cleared).
  // result.had_previous tells whether the key existed.
  Result<CommitResult> Delete(std::string_view key,
                              Condition condition = Condition::kNone,
                              uint64_t expected_sequence = 0);
  // Gives the rest of the segment back to the keyspace.
  Status Close();

 private:
  Result<CommitResult> Append(std::string_view key, std::string_view value,
                              bool tombstone, Condition condition,
                              uint64_t expected);
  Status EnsureRoom(uint64_t bytes, bool tombstone);

  std::shared_ptr<Keyspace> ks_;
  SegmentGrant grant_;
  bool have_grant_ = false;
  CommitGroup* const group_ = nullptr;
};

}  // namespace kv::store

#endif  // KV_STORE_WRITER_H_
