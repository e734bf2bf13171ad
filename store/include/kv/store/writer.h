// kv::store::Writer — a local writer: appends records to its own granted
// segment and commits them, exactly as a remote client does through
// kvserver (write record, make it durable, commit). Used by kvadmin, the
// benchmark and tests. Every commit goes through the keyspace's commit
// pipeline (commit_pipeline.h): Put/Delete commit one request (sharing a
// commit point with concurrent writers'), Stage*/CommitStaged commit a
// batch of this writer's requests with one commit point.
//
// Thread-safety: one Writer per thread (it owns one segment grant); any
// number of Writers may work on one keyspace in parallel.
// Lifetime: holds a shared_ptr to its Keyspace; destroy before the Pool.
#ifndef KV_STORE_WRITER_H_
#define KV_STORE_WRITER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "kv/status.h"
#include "kv/store/commit_pipeline.h"
#include "kv/store/keyspace.h"
#include "kv/store/segment.h"

namespace kv::store {

class Writer {
 public:
  // `gather`: kNo makes every commit its own commit point.
  explicit Writer(std::shared_ptr<Keyspace> keyspace,
                  CommitPipeline::Gather gather = CommitPipeline::Gather::kYes);
  ~Writer();  // returns the segment
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Durable put: when it returns ok the value survives a crash. Commits
  // what is staged first (its results wait for CommitStaged). Errors:
  // invalid_argument (key not 1..1024 bytes, value over the keyspace's
  // max), no_space (the log is full: the index grows by itself until the
  // log is; the Writer never runs the cleaner — call Keyspace::Clean and
  // retry), and whatever Commit returns.
  // With a condition (Commit's), condition_failed when it does not hold.
  Result<CommitResult> Put(std::string_view key, std::string_view value,
                           Condition condition = Condition::kNone,
                           uint64_t expected_sequence = 0);
  // As Put, and the key expires ttl_ms after the commit (the keyspace's
  // clock stamps the absolute expiry). invalid_argument also when ttl_ms
  // is not 1 ms .. 100 years (record_format::CheckTtl).
  Result<CommitResult> PutExpiring(std::string_view key, std::string_view value,
                                   int64_t ttl_ms,
                                   Condition condition = Condition::kNone,
                                   uint64_t expected_sequence = 0);
  // Durable delete (a tombstone record, then the slot is cleared).
  // result.had_previous tells whether the key existed.
  Result<CommitResult> Delete(std::string_view key,
                              Condition condition = Condition::kNone,
                              uint64_t expected_sequence = 0);
  // Batched: writes the record and queues its commit request (nothing is
  // committed or visible yet). Errors as Put's own checks and no_space of
  // the log; a staged request's commit errors come from CommitStaged.
  Status StagePut(std::string_view key, std::string_view value,
                  Condition condition = Condition::kNone,
                  uint64_t expected_sequence = 0);
  Status StageDelete(std::string_view key,
                     Condition condition = Condition::kNone,
                     uint64_t expected_sequence = 0);
  // Commits every staged request in one pipeline call (one commit point,
  // where the stages allow) and appends one result per request staged
  // since the last call, in order. A full segment commits the staged
  // requests in it before it is sealed (their results wait here).
  void CommitStaged(std::vector<Result<CommitResult>>* results);
  size_t staged() const { return staged_.size(); }
  // Commits what is staged, then gives the rest of the segment back.
  Status Close();

 private:
  // ttl_ms 0: no expiry.
  Status Stage(std::string_view key, std::string_view value, bool tombstone,
               Condition condition, uint64_t expected, int64_t ttl_ms = 0);
  void CommitStagedInto(std::vector<Result<CommitResult>>* results);
  Status EnsureRoom(uint64_t bytes, bool tombstone);

  std::shared_ptr<Keyspace> ks_;
  SegmentGrant grant_;
  bool have_grant_ = false;
  const CommitPipeline::Gather gather_;
  std::vector<CommitRequest> staged_;
  std::vector<Result<CommitResult>> early_;  // committed before a seal
};

}  // namespace kv::store

#endif  // KV_STORE_WRITER_H_
