// The campaign thread. Lock rule: a LeaseKeeper is never stopped or
// destroyed while mu_ is held, because its fence callback takes mu_ (it
// cancels the watch the thread waits on) and stopping joins that thread.
#include "kv/cluster/election.h"

namespace kv::cluster {
namespace {

// A watch error after which the same watch resumes on its next Next().
bool Transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kTimedOut ||
         s.code() == StatusCode::kCorruption;
}

}  // namespace

Result<std::unique_ptr<Election>> Election::Start(Etcd& etcd, Options options) {
  Result<EtcdKeys> keys = EtcdKeys::ForCluster(options.cluster);
  if (!keys.ok()) return keys.status();
  if (options.node_id == 0) {
    return Status::InvalidArgument("election: node id 0 is not a node");
  }
  if (options.poll.count() <= 0) {
    return Status::InvalidArgument("election: the poll interval must be > 0");
  }
  std::unique_ptr<Clock> own_clock;
  if (options.clock == nullptr) own_clock = std::make_unique<SteadyClock>();
  std::unique_ptr<Election> e(new Election(
      etcd, std::move(options), keys->controller(), std::move(own_clock)));
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  return e;
}

Election::Election(Etcd& etcd, Options options, std::string key,
                   std::unique_ptr<Clock> own_clock)
    : etcd_(etcd),
      options_(std::move(options)),
      key_(std::move(key)),
      own_clock_(std::move(own_clock)),
      clock_(options_.clock ? options_.clock : own_clock_.get()) {}

Election::~Election() { (void)Resign(); }

std::optional<Election::Term> Election::Leading(Clock::TimePoint now) const {
  std::lock_guard<std::mutex> l(mu_);
  if (!term_ || !keeper_ || !keeper_->Alive(now)) return std::nullopt;
  return term_;
}

Compare Election::Guard(const Term& term) const {
  // The key is never modified while it is ours, so its mod revision stays
  // the revision that created it; any other write to it breaks the guard.
  return Compare::ModRevisionIs(key_, term.revision);
}

bool Election::WaitLeading(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, timeout, [&] {
    return stop_.load() || (term_ && keeper_ && keeper_->Alive(clock_->Now()));
  });
  return term_ && keeper_ && keeper_->Alive(clock_->Now());
}

void Election::Pause() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, options_.poll, [&] { return stop_.load(); });
}

std::unique_ptr<EtcdWatch> Election::OpenWatch(int64_t from) {
  Result<std::unique_ptr<EtcdWatch>> w = etcd_.Watch(key_, from);
  if (!w.ok()) {
    Pause();
    return nullptr;
  }
  std::lock_guard<std::mutex> l(mu_);
  watch_ = w->get();
  if (stop_.load()) watch_->Cancel();
  return std::move(*w);
}

void Election::CloseWatch() {
  std::lock_guard<std::mutex> l(mu_);
  watch_ = nullptr;
}

void Election::Run() {
  while (!stop_.load()) {
    if (!keeper_ || keeper_->fenced()) {
      std::unique_ptr<LeaseKeeper> old;
      {
        std::lock_guard<std::mutex> l(mu_);
        old = std::move(keeper_);
      }
      old.reset();  // outside mu_ (see the lock rule)
      Result<std::unique_ptr<LeaseKeeper>> k =
          LeaseKeeper::Grant(etcd_, *clock_, options_.lease, [this] {
            std::lock_guard<std::mutex> l(mu_);
            if (watch_) watch_->Cancel();  // wake the thread: the lease died
            cv_.notify_all();
          });
      if (!k.ok()) {
        Pause();
        continue;
      }
      std::lock_guard<std::mutex> l(mu_);
      keeper_ = std::move(*k);
    }
    Result<std::optional<Term>> won = TryWin();
    if (!won.ok()) {
      Pause();
    } else if (won->has_value()) {
      Lead(**won);
    } else if (Result<Range> r = etcd_.Get(key_); !r.ok()) {
      Pause();
    } else if (!r->kvs.empty()) {
      WaitForVacancy(r->revision + 1);
    }  // else: vacated since the Txn; try again at once
  }
}

Result<std::optional<Election::Term>> Election::TryWin() {
  const int64_t lease = keeper_->lease_id();
  Result<TxnResult> t = etcd_.Txn(
      {Compare::Absent(key_)},
      {TxnOp::Put(key_, std::to_string(options_.node_id), lease)}, {});
  if (!t.ok()) return t.status();
  if (!t->succeeded) return std::optional<Term>();
  // The put ran at t->revision, which is therefore the key's create (and
  // mod) revision.
  return std::optional<Term>(Term{t->revision, lease});
}

void Election::WaitForVacancy(int64_t from) {
  std::unique_ptr<EtcdWatch> w = OpenWatch(from);
  if (!w) return;
  bool vacant = false;
  while (!vacant && !stop_.load() && !keeper_->fenced()) {
    Result<std::vector<WatchEvent>> events = w->Next(options_.poll);
    if (!events.ok()) {
      // The watch resumes by itself from its next revision after these
      // (a cancel only comes with stop_ or a fence, which end the loop);
      // a compaction or a refusal ends it: re-read in the campaign loop.
      if (Transient(events.status())) continue;
      break;
    }
    for (const WatchEvent& e : *events) {
      if (e.key == key_ && e.type == WatchEvent::Type::kDelete) vacant = true;
    }
  }
  CloseWatch();
}

void Election::Lead(const Term& term) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_.load()) return;
    term_ = term;
    cv_.notify_all();
  }
  terms_won_++;
  std::unique_ptr<EtcdWatch> w = OpenWatch(term.revision + 1);
  bool lost = false;
  while (!lost && !stop_.load() && !keeper_->fenced()) {
    if (!w) {
      // A compaction or a refused watch: check the key directly.
      Result<Range> r = etcd_.Get(key_);
      if (!r.ok()) {
        Pause();
        continue;
      }
      if (r->kvs.empty() || r->kvs[0].mod_revision != term.revision) break;
      w = OpenWatch(r->revision + 1);
      continue;
    }
    Result<std::vector<WatchEvent>> events = w->Next(options_.poll);
    if (!events.ok()) {
      if (!Transient(events.status())) {
        CloseWatch();
        w.reset();
      }
      continue;
    }
    for (const WatchEvent& e : *events) {
      if (e.key == key_) lost = true;  // deleted or overwritten: not ours
    }
  }
  CloseWatch();
  std::lock_guard<std::mutex> l(mu_);
  term_.reset();
  cv_.notify_all();
}

Status Election::Resign() {
  std::lock_guard<std::mutex> resign(resign_mu_);
  std::optional<Term> term;
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_.store(true);
    term = term_;
    term_.reset();  // stop acting before the key goes
    if (watch_) watch_->Cancel();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::unique_ptr<LeaseKeeper> keeper;
  {
    std::lock_guard<std::mutex> l(mu_);
    keeper = std::move(keeper_);
  }
  Status s;
  if (term) {
    Result<TxnResult> t = etcd_.Txn({Guard(*term)}, {TxnOp::Delete(key_)}, {});
    if (!t.ok()) s = t.status();
  }
  // Revoking deletes the key too if the thread won after we looked.
  if (keeper) {
    Status r = keeper->Revoke();
    if (s.ok() && term) s = r;
  }
  return s;
}

}  // namespace kv::cluster
