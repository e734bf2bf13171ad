// kv::store::CommitPoint — the step after which a commit may be
// acknowledged: what "durable" means for a keyspace.
//
// The commit pipeline (commit_pipeline.h) calls MakeDurable once for
// everything it decided since the last call: the records of the puts
// (and, in the publish-before-durable mode, their buckets), whichever
// callers they came from. The default is the local persist
// (LocalCommitPoint: one PersistRanges, i.e. one msync on a
// page-granularity file, one fence on PMem). Replication plugs in "local
// persist + every backup durable".
//
// publish_before_durable() chooses what a reader may see:
//  - true (local): a put's slot is stored before the commit point and
//    persisted with it (record + buckets as one persist point). A reader
//    may see a value shortly before it is durable — a crash then loses
//    it, but nobody was told it committed.
//  - false (strict, for replication): a put's slot is reserved, not
//    stored, until MakeDurable returned; MakeDurable covers the records
//    only, and the pipeline stores and persists the slots afterwards
//    (publish). A reader never sees a value a failover could lose.
//
// batches_in_flight() says how many pipeline leaders may run at once,
// each with its own batch at this commit point (the next batch gathers
// while they run). 1 unless the overlap was measured to pay: the local
// persist allows 2 (two msyncs of one file overlap: kvbench_flush_floor
// measured 2 threads at 1.08x to 1.8x the rate of one, as the disk's
// hour allowed; tools/kvbench/README.md).
//
// Thread-safety: MakeDurable is called by up to batches_in_flight()
// pipeline leaders at a time per keyspace, plus ungathered callers
// (Gather::kNo) and the ordered paths (deletes, in-place replacements) of
// any caller: implementations must allow concurrent calls. Lifetime:
// outlives the keyspace's commits.
#ifndef KV_STORE_COMMIT_POINT_H_
#define KV_STORE_COMMIT_POINT_H_

#include <cstddef>

#include "kv/status.h"
#include "kv/store/persister.h"

namespace kv::store {

class CommitPoint {
 public:
  virtual ~CommitPoint() = default;
  // Makes every range durable (in no particular order: a failure during
  // the call may leave any subset durable) before returning ok. An error
  // means: not all are known to be durable; the pipeline then refuses
  // the commits it covered (in the strict mode nothing of them was ever
  // visible).
  virtual Status MakeDurable(const Persister::Range* ranges, size_t n) = 0;
  virtual bool publish_before_durable() const = 0;
  virtual int batches_in_flight() const { return 1; }
};

// The local persist: one persist point for all ranges.
class LocalCommitPoint : public CommitPoint {
 public:
  explicit LocalCommitPoint(Persister* persister) : persister_(persister) {}
  Status MakeDurable(const Persister::Range* ranges, size_t n) override {
    persister_->PersistRanges(ranges, n);
    return Status::Ok();
  }
  bool publish_before_durable() const override { return true; }
  int batches_in_flight() const override { return 2; }

 private:
  Persister* const persister_;
};

}  // namespace kv::store

#endif  // KV_STORE_COMMIT_POINT_H_
