#include "kv/store/commit_pipeline.h"

#include "kv/store/commit_group.h"

namespace kv::store {

void CommitPipeline::Commit(const CommitRequest* requests, size_t n,
                            std::vector<Result<CommitResult>>* results) {
  CommitGroup group(ks_);
  for (size_t i = 0; i < n; i++) results->push_back(group.Add(requests[i]));
  group.Finish();
}

}  // namespace kv::store
