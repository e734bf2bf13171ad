#include "kv/cluster/controller.h"

#include "controller_plan.h"
#include "controller_state.h"

namespace kv::cluster {

Result<std::unique_ptr<Controller>> Controller::Start(Etcd& etcd,
                                                      Options options) {
  Result<EtcdKeys> keys = EtcdKeys::ForCluster(options.cluster);
  if (!keys.ok()) return keys.status();
  if (options.node_id == 0) {
    return Status::InvalidArgument("controller: node id 0 is not a node");
  }
  if (options.poll.count() <= 0 || options.max_txn_attempts <= 0) {
    return Status::InvalidArgument(
        "controller: the poll interval and the attempt count must be > 0");
  }
  // The desired keyspaces are checked by the planner's own rules.
  Result<Placement> dry =
      PlanPlacement(ClusterMap(), {{}, options.desired, {}});
  if (!dry.ok()) return dry.status();

  std::unique_ptr<Clock> own_clock;
  if (options.clock == nullptr) own_clock = std::make_unique<SteadyClock>();
  std::unique_ptr<Controller> c(new Controller(
      etcd, std::move(options), std::move(*keys), std::move(own_clock)));
  Result<std::unique_ptr<Election>> e =
      Election::Start(etcd, {c->options_.cluster, c->options_.node_id,
                             c->options_.lease, c->clock_, c->options_.poll});
  if (!e.ok()) return e.status();
  c->election_ = std::move(*e);
  c->thread_ = std::thread([p = c.get()] { p->Run(); });
  return c;
}

Controller::Controller(Etcd& etcd, Options options, EtcdKeys keys,
                       std::unique_ptr<Clock> own_clock)
    : etcd_(etcd),
      options_(std::move(options)),
      keys_(std::move(keys)),
      own_clock_(std::move(own_clock)),
      clock_(options_.clock ? options_.clock : own_clock_.get()) {}

Controller::~Controller() { Stop(); }

void Controller::Stop() {
  std::lock_guard<std::mutex> s(stop_mu_);
  stop_.store(true);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (watch_) watch_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
  if (election_) (void)election_->Resign();
}

Controller::Stats Controller::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

void Controller::Fail(const std::string& error) {
  std::lock_guard<std::mutex> l(mu_);
  stats_.last_error = error;
}

void Controller::Run() {
  int64_t from = 0;  // 0: a pass is due
  while (!stop_.load()) {
    std::optional<Election::Term> term = election_->Leading(clock_->Now());
    if (!term) {
      from = 0;  // a new leader reads everything first
      (void)election_->WaitLeading(options_.poll);
      continue;
    }
    if (from == 0) {
      from = Pass(*term);
      if (from == 0 && !stop_.load()) {
        // etcd trouble or a busy writer: wait a little before re-reading.
        std::this_thread::sleep_for(options_.poll);
      }
      continue;
    }
    if (!Quiet(from)) from = 0;
  }
  std::lock_guard<std::mutex> l(mu_);
  watch_.reset();
}

int64_t Controller::Pass(const Election::Term& term) {
  for (int attempt = 0; attempt < options_.max_txn_attempts; attempt++) {
    if (stop_.load()) return 0;
    // One read at one revision: the map, the registrations, the moves and
    // the drain keys agree.
    Result<Range> r = etcd_.GetPrefix(keys_.prefix());
    if (!r.ok()) {
      Fail("reading " + keys_.prefix() + ": " + r.status().ToString());
      return 0;
    }
    const int64_t watch_from = r->revision + 1;
    const ControllerState state =
        ReadControllerState(*r, keys_, options_.desired);
    if (!state.map_error.ok()) {
      // Never overwrite what we cannot read: a person must look.
      Fail(keys_.map() + " does not decode (" + state.map_error.ToString() +
           "); fix or delete it with etcdctl");
      return watch_from;
    }
    const ControllerPlan plan =
        PlanPass(state, keys_, {options_.rebalance, options_.max_moves});
    {
      std::lock_guard<std::mutex> l(mu_);
      stats_.passes++;
      stats_.last_problems = plan.problems;
      stats_.last_error =
          plan.placement_error.ok()
              ? std::string()
              : "planning the map: " + plan.placement_error.ToString();
    }
    if (plan.writes.empty()) return watch_from;
    switch (Write(term, plan.writes)) {
      case WriteOutcome::kDone:
        // Watch from the read, not the writes: a change between the two
        // (a node dying) must start another pass, and so do our own
        // writes, which the next pass builds on (a switch frees a move's
        // place, a new map lets the moves go on).
        return watch_from;
      case WriteOutcome::kFailed:
        return 0;
      case WriteOutcome::kLostRace:
        break;  // re-read and decide again
    }
  }
  Fail("lost " + std::to_string(options_.max_txn_attempts) +
       " transaction races in a row; trying again shortly");
  return 0;
}

Controller::WriteOutcome Controller::Write(
    const Election::Term& term, const std::vector<ControllerWrite>& writes) {
  std::vector<std::string> changes;
  WriteOutcome outcome = WriteOutcome::kDone;
  for (const ControllerWrite& w : writes) {
    // Act only while leading; the election guard makes etcd refuse the
    // write anyway once the key is not this term's.
    if (!election_->Leading(clock_->Now())) {
      outcome = WriteOutcome::kFailed;
      break;
    }
    std::vector<Compare> compares = w.compares;
    compares.push_back(election_->Guard(term));
    Result<TxnResult> t = etcd_.Txn(compares, w.ops, {});
    if (!t.ok()) {
      // After timed_out the write may have landed: the re-read tells.
      Fail("writing " + w.ops.at(0).key + ": " + t.status().ToString());
      outcome = WriteOutcome::kFailed;
      break;
    }
    std::lock_guard<std::mutex> l(mu_);
    if (!t->succeeded) {
      // Someone changed what this write was decided on (or the term
      // ended): what was written so far stands; re-read for the rest.
      stats_.lost_races++;
      outcome = WriteOutcome::kLostRace;
      break;
    }
    stats_.writes++;
    changes.insert(changes.end(), w.changes.begin(), w.changes.end());
  }
  std::lock_guard<std::mutex> l(mu_);
  if (!changes.empty()) stats_.last_changes = std::move(changes);
  return outcome;
}

bool Controller::Quiet(int64_t from) {
  EtcdWatch* w = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!watch_ || watch_from_ != from) {
      watch_.reset();
      Result<std::unique_ptr<EtcdWatch>> opened =
          etcd_.Watch(keys_.prefix(), from);
      if (!opened.ok()) {
        stats_.last_error =
            "watching " + keys_.prefix() + ": " + opened.status().ToString();
        return false;
      }
      watch_ = std::move(*opened);
      watch_from_ = from;
      if (stop_.load()) watch_->Cancel();
    }
    w = watch_.get();  // only this thread replaces or resets watch_
  }
  Result<std::vector<WatchEvent>> events = w->Next(options_.poll);
  if (!events.ok()) {
    const StatusCode c = events.status().code();
    if (c == StatusCode::kUnavailable || c == StatusCode::kTimedOut ||
        c == StatusCode::kCorruption) {
      return true;  // the watch resumes from its next revision by itself
    }
    std::lock_guard<std::mutex> l(mu_);
    watch_.reset();  // compacted or refused: re-read, watch afresh
    return false;
  }
  // Any change but the election key and the progress reports (at most one
  // a second per move, and never a reason to act) starts a pass.
  const std::string controller_key = keys_.controller();
  const std::string progress = keys_.move_progress_prefix();
  for (const WatchEvent& e : *events) {
    if (e.key != controller_key && !e.key.starts_with(progress)) return false;
  }
  return true;
}

}  // namespace kv::cluster
