// kv::store::CommitPipeline — the one path by which commits of a keyspace
// reach their commit point, whichever writer (kvserver worker, local
// Writer, Keyspace::Commit) they come from.
//
// Commit(requests, n, results) commits one caller's requests in order and
// appends one result per request, in request order. When it returns,
// every ok result is durable (its commit point, commit_point.h, returned)
// and may be acknowledged; a refused request changed nothing.
//
// Stages (docs/format.md "Commit pipeline" says what a reader or a crash
// may see between each pair):
//  1. prepare (the caller's thread, no lock): bounds and ClaimAppend, the
//     claim fence, CRC, key hash, op checks.
//  2. decide (a leader, under the key's stripe): condition, sequence
//     (SealRecord), slot taken — stored in the publish-before-durable
//     mode, only reserved in the strict one. The stripe stays held until
//     publish, so no other commit or cleaner move sees the key meanwhile.
//  3. commit point: ONE CommitPoint::MakeDurable for everything decided
//     since the last one, of every caller in the batch.
//  4. publish: slots stored where not yet (strict: then persisted), old
//     slots cleared, key count and live bytes, stripes released, results.
// Callers with Gather::kYes enqueue their prepared batch; one becomes the
// leader, takes everything queued, runs stages 2–4 and wakes the others
// (as RocksDB's write group); while it runs, the next batch gathers. Up
// to the commit point's batches_in_flight() leaders run at once (the
// local persist: 2), each with the callers queued when it took over: a
// key's stripe is held from decide to publish, so two batches never hold
// undecided versions of one key, and one caller's commits (a worker
// blocks in Commit) never overlap.
// Inside a batch: a key (stripe) twice, or a stripe another thread holds,
// first runs stages 3–4 for what is decided (never waiting for a stripe
// while holding one: the cleaner and ungathered callers take stripes
// too); a delete or an in-place replacement (no empty slot) has ordered
// persist points of its own and runs after stages 3–4 of what is
// decided. Gather::kNo: the caller runs the stages itself, one commit
// point per request (kvserver --group_commit=false).
//
// Thread-safety: Commit may be called from any number of threads at once.
// set_commit_point only before the first commit.
// Lifetime: owned by its Keyspace (Keyspace::pipeline()).
#ifndef KV_STORE_COMMIT_PIPELINE_H_
#define KV_STORE_COMMIT_PIPELINE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "kv/status.h"
#include "kv/store/commit_point.h"
#include "kv/store/segment.h"

namespace kv::store {

class Keyspace;

class CommitPipeline {
 public:
  enum class Gather { kYes, kNo };

  explicit CommitPipeline(Keyspace* keyspace);
  ~CommitPipeline();
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // Appends n results to *results, in request order. Errors per request
  // as Keyspace::Commit; plus what MakeDurable returns (nothing applied).
  void Commit(const CommitRequest* requests, size_t n,
              std::vector<Result<CommitResult>>* results,
              Gather gather = Gather::kYes);

  // Replaces the local persist (nullptr: back to it). Not owned.
  void set_commit_point(CommitPoint* point);
  CommitPoint* commit_point() const { return point_; }

  // Tests: callers queued behind the running leaders.
  size_t queued_for_testing();

 private:
  struct Caller;
  struct Item;
  class Batch;

  // Stages 2–4 for one item, on the calling thread.
  void RunAlone(Item* item);
  // After the stages: items refused for a full neighbourhood are decided
  // again after a growth; then a growth if the load calls for one.
  void GrowAndRetry(Caller* me);

  void Run(Caller* const* callers, size_t n);

  Keyspace* const ks_;
  LocalCommitPoint local_;
  CommitPoint* point_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Caller*> queue_;  // waiting for the next leader
  int leaders_ = 0;  // running stages 2–4: <= point_->batches_in_flight()
};

}  // namespace kv::store

#endif  // KV_STORE_COMMIT_PIPELINE_H_
