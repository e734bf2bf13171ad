#include "kv/cluster/controller.h"

#include "kv/cluster/node_registration.h"

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
  Result<Placement> dry = PlanPlacement(ClusterMap(), {{}, options.desired});
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
  const std::string map_key = keys_.map();
  for (int attempt = 0; attempt < options_.max_txn_attempts; attempt++) {
    if (stop_.load()) return 0;
    // One read at one revision: the map and the registrations agree.
    Result<Range> r = etcd_.GetPrefix(keys_.prefix());
    if (!r.ok()) {
      Fail("reading " + keys_.prefix() + ": " + r.status().ToString());
      return 0;
    }
    const int64_t watch_from = r->revision + 1;
    const KeyValue* map_kv = nullptr;
    PlacementRequest req{{}, options_.desired};
    std::vector<std::string> ignored;
    for (const KeyValue& kv : r->kvs) {
      if (kv.key == map_key) map_kv = &kv;
      if (kv.key.starts_with(keys_.keyspaces_prefix())) {
        AddDesired(kv, &req.desired, &ignored);
        continue;
      }
      if (!kv.key.starts_with(keys_.nodes_prefix())) continue;
      Result<uint32_t> id = keys_.NodeIdOf(kv.key);
      Result<NodeRegistration> reg = NodeRegistration::Decode(kv.value);
      if (!id.ok() || !reg.ok() || reg->node_id != *id) {
        ignored.push_back("ignoring " + kv.key +
                          ": not a valid registration of that node id");
        continue;
      }
      req.live_nodes.push_back(*id);
    }
    ClusterMap current;
    if (map_kv != nullptr) {
      Result<ClusterMap> m = ClusterMap::Decode(map_kv->value);
      if (!m.ok()) {
        // Never overwrite what we cannot read: a person must look.
        Fail(map_key + " does not decode (" + m.status().ToString() +
             "); fix or delete it with etcdctl");
        return watch_from;
      }
      current = std::move(*m);
    }
    Result<Placement> plan = PlanPlacement(current, req);
    if (!plan.ok()) {
      Fail("planning: " + plan.status().ToString());
      return watch_from;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      stats_.passes++;
      stats_.last_problems = ignored;
      stats_.last_problems.insert(stats_.last_problems.end(),
                                  plan->problems.begin(), plan->problems.end());
      stats_.last_error.clear();
    }
    if (!plan->changed()) return watch_from;
    // Act only while leading; the election guard below makes etcd refuse
    // the write anyway once the key is not this term's.
    if (!election_->Leading(clock_->Now())) return 0;
    const Compare map_guard =
        map_kv ? Compare::ModRevisionIs(map_key, map_kv->mod_revision)
               : Compare::Absent(map_key);
    Result<TxnResult> t =
        etcd_.Txn({map_guard, election_->Guard(term)},
                  {TxnOp::Put(map_key, plan->map.Encode())}, {});
    if (!t.ok()) {
      // After timed_out the write may have landed: the re-read tells.
      Fail("writing " + map_key + ": " + t.status().ToString());
      return 0;
    }
    std::lock_guard<std::mutex> l(mu_);
    if (t->succeeded) {
      stats_.writes++;
      stats_.last_changes = plan->changes;
      // Watch from the read, not the write: a change between the two
      // (a node dying) must start another pass.
      return watch_from;
    }
    stats_.lost_races++;
  }
  Fail("lost " + std::to_string(options_.max_txn_attempts) +
       " map transaction races in a row; trying again shortly");
  return 0;
}

void Controller::AddDesired(const KeyValue& kv,
                            std::vector<KeyspaceSpec>* desired,
                            std::vector<std::string>* ignored) const {
  // Anyone with etcd access can write these keys: a bad one is reported
  // and skipped, and never stops the pass (repairs must go on).
  Result<std::string> name = keys_.KeyspaceNameOf(kv.key);
  if (!name.ok()) {
    ignored->push_back("ignoring desired keyspace: " + name.status().message());
    return;
  }
  Result<KeyspaceSpec> spec = KeyspaceSpec::Decode(*name, kv.value);
  if (!spec.ok()) {
    ignored->push_back("ignoring " + kv.key + ": " + spec.status().message() +
                       "; fix or delete it with etcdctl");
    return;
  }
  // The options win on a name conflict (they come from the operator of
  // this process); etcd's keys are sorted, so names are already unique.
  for (const KeyspaceSpec& d : *desired) {
    if (d.name == spec->name) return;
  }
  desired->push_back(std::move(*spec));
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
  const std::string controller_key = keys_.controller();
  for (const WatchEvent& e : *events) {
    if (e.key != controller_key) return false;  // the map or a node changed
  }
  return true;
}

}  // namespace kv::cluster
