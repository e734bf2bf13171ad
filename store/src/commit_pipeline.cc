// CommitPipeline: the leader/follower queue and the batch that runs the
// stages (commit_pipeline.h); the keyspace's side of each stage is in
// keyspace_commit.cc.
#include "kv/store/commit_pipeline.h"

#include <algorithm>

#include "index.h"
#include "kv/store/keyspace.h"

namespace kv::store {

// One request on its way through the stages.
struct CommitPipeline::Item {
  const CommitRequest* request = nullptr;
  bool prepared_ok = false;
  Keyspace::Prepared prepared;
  Keyspace::Decided decided;  // kDone with the status when refused
};

// One Commit() call: its items, in request order.
struct CommitPipeline::Caller {
  std::vector<Item> items;
  bool taken = false;  // under mu_: in a leader's batch
  bool done = false;   // under mu_: a leader ran its stages 2–4
};

// Stages 2–4 over items added in order. Holds the stripe of every
// decided put until their publish.
class CommitPipeline::Batch {
 public:
  static constexpr size_t kMaxHeldStripes = 48;
  Batch(Keyspace* ks, CommitPoint* point) : ks_(ks), point_(point) {}
  ~Batch() { Flush(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // Stage 2 for one item (after stages 3–4 of what is decided, where the
  // item needs that first).
  void Add(Item* item) {
    if (!item->prepared_ok) return;
    std::mutex& stripe = ks_->StripeFor(item->prepared.view.header.key_hash);
    // A bound on the stripes one batch holds: each decided put holds its
    // own until the commit point, and a thread holding more than 64 locks
    // at once (with the index's resize lock and the segment table's) is
    // past what ThreadSanitizer's deadlock detector can track — it
    // aborted inside a kvserver worker with 4 sessions x 16 puts in one
    // pass. A larger pass takes one more commit point per 48 puts.
    if (locks_.size() >= kMaxHeldStripes) Flush();
    // The key's stripe is ours already (the same key, or one of its
    // stripe, twice): what it holds reaches its commit point first, so
    // that a key never has two undecided-durable versions.
    if (Holds(&stripe)) Flush();
    std::unique_lock<std::mutex> lock(stripe, std::defer_lock);
    // Never wait for a stripe while holding others (two leaders, a leader
    // and an ungathered caller or the cleaner would deadlock): flush,
    // then wait holding nothing.
    if (locks_.empty() || !lock.try_lock()) {
      Flush();
      lock.lock();
    }
    Keyspace::Decided& d = item->decided;
    ks_->Decide(*item->request, item->prepared,
                point_->publish_before_durable(), &d);
    switch (d.path) {
      case Keyspace::Decided::Path::kReserved:
        decided_.push_back(&d);
        locks_.push_back(lock.release());
        break;
      case Keyspace::Decided::Path::kOrdered:
        // Its own ordered persist points: what is decided goes first.
        Flush();
        ks_->CompleteOrdered(&d, point_);
        break;
      case Keyspace::Decided::Path::kDone:
        break;
    }
  }

  // Stages 3 and 4 for every put decided since the last Flush.
  void Flush() {
    if (decided_.empty()) return;
    if (ks_->ReachCommitPoint(decided_.data(), decided_.size(), point_).ok()) {
      ks_->Publish(decided_.data(), decided_.size());
    }
    for (std::mutex* m : locks_) m->unlock();
    decided_.clear();
    locks_.clear();
  }

 private:
  bool Holds(const std::mutex* m) const {
    return std::find(locks_.begin(), locks_.end(), m) != locks_.end();
  }

  Keyspace* const ks_;
  CommitPoint* const point_;
  std::vector<Keyspace::Decided*> decided_;
  std::vector<std::mutex*> locks_;  // held, one per decided put
};

CommitPipeline::CommitPipeline(Keyspace* keyspace)
    : ks_(keyspace), local_(keyspace->persister()), point_(&local_) {}

CommitPipeline::~CommitPipeline() = default;

void CommitPipeline::set_commit_point(CommitPoint* point) {
  point_ = point != nullptr ? point : &local_;
}

void CommitPipeline::RunAlone(Item* item) {
  Index::Reading reading(ks_->index());
  Batch batch(ks_, point_);
  batch.Add(item);
}

void CommitPipeline::GrowAndRetry(Caller* me) {
  // A new key refused for a full neighbourhood: grow the index (once per
  // generation, whoever asks first) and decide the key again — its claim
  // and verified record still stand. Bounded: a doubling halves the load.
  for (Item& it : me->items) {
    for (int round = 0; round < 3 && it.decided.index_full; round++) {
      Status st = ks_->GrowIndexFrom(it.decided.index_generation);
      if (!st.ok()) {
        it.decided.status = Status::NoSpace(
            "this key's index slots are taken and the index "
            "cannot grow: " +
            st.message());
        break;
      }
      RunAlone(&it);
    }
  }
  ks_->MaybeGrow();
  ks_->MaybeCheckpoint();
}

size_t CommitPipeline::queued_for_testing() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void CommitPipeline::Run(Caller* const* callers, size_t n) {
  // Slots are held from decide to publish: no growth meanwhile.
  Index::Reading reading(ks_->index());
  Batch batch(ks_, point_);
  for (size_t c = 0; c < n; c++) {
    for (Item& item : callers[c]->items) batch.Add(&item);
  }
  batch.Flush();
}

void CommitPipeline::Commit(const CommitRequest* requests, size_t n,
                            std::vector<Result<CommitResult>>* results,
                            Gather gather) {
  // Stage 1 on the caller's thread, in request order (claims advance the
  // grant's tail).
  Caller me;
  me.items.resize(n);
  for (size_t i = 0; i < n; i++) {
    Item& it = me.items[i];
    it.request = &requests[i];
    Result<Keyspace::Prepared> p = ks_->PrepareCommit(requests[i]);
    if (p.ok()) {
      it.prepared = *p;
      it.prepared_ok = true;
    } else {
      it.decided.status = p.status();
    }
  }
  if (gather == Gather::kNo) {
    // One commit point per request, run by the caller itself.
    for (Item& it : me.items) RunAlone(&it);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&me);
    // A caller taken into a running batch waits for it to be done (it
    // must not lead, nor return, while that leader uses its items).
    while (!me.done && (me.taken || leaders_ >= point_->batches_in_flight())) {
      cv_.wait(lock);
    }
    if (!me.done) {
      // A leader: everything queued so far is one batch; whoever arrives
      // meanwhile gathers for the next (or leads it beside this one).
      leaders_++;
      std::vector<Caller*> group;
      group.swap(queue_);
      for (Caller* c : group) c->taken = true;
      lock.unlock();
      Run(group.data(), group.size());
      lock.lock();
      for (Caller* c : group) c->done = true;
      leaders_--;
      lock.unlock();
      cv_.notify_all();  // followers of this batch, and the next leader
    }
  }
  GrowAndRetry(&me);
  // Results in request order.
  for (Item& it : me.items) {
    if (it.decided.status.ok()) {
      results->push_back(it.decided.result);
    } else {
      results->push_back(it.decided.status);
    }
  }
}

}  // namespace kv::store
