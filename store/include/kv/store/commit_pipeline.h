// kv::store::CommitPipeline — the one path by which commits of a keyspace
// reach their commit point, whichever writer (kvserver worker, local
// Writer) they come from.
//
// Commit(requests, n, results) commits one caller's requests in order and
// appends one result per request. When it returns, every ok result is
// durable and may be acknowledged; a refused request changed nothing.
// Requests of several callers that arrive while a commit point is in
// progress share the next one (one persist for all of them).
//
// Thread-safety: Commit may be called from any number of threads at once.
// Lifetime: owned by its Keyspace (Keyspace::pipeline()).
#ifndef KV_STORE_COMMIT_PIPELINE_H_
#define KV_STORE_COMMIT_PIPELINE_H_

#include <cstddef>
#include <vector>

#include "kv/status.h"
#include "kv/store/segment.h"

namespace kv::store {

class Keyspace;

class CommitPipeline {
 public:
  explicit CommitPipeline(Keyspace* keyspace) : ks_(keyspace) {}
  CommitPipeline(const CommitPipeline&) = delete;
  CommitPipeline& operator=(const CommitPipeline&) = delete;

  // Appends n results to *results, in request order. Errors per request
  // as Keyspace::Commit.
  void Commit(const CommitRequest* requests, size_t n,
              std::vector<Result<CommitResult>>* results);

 private:
  Keyspace* const ks_;
};

}  // namespace kv::store

#endif  // KV_STORE_COMMIT_PIPELINE_H_
