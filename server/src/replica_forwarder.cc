#include "replica_forwarder.h"

#include <algorithm>
#include <utility>

#include "log.h"

namespace kv::server {
namespace {

using Clock = std::chrono::steady_clock;

// A backup at another epoch than this node is given this long to apply
// the newest map before a wrong_shard counts as its failure.
constexpr auto kEpochPause = std::chrono::milliseconds(50);

std::string NodeName(uint32_t node) { return "node " + std::to_string(node); }

}  // namespace

ReplicaForwarder::ReplicaForwarder(Options options)
    : options_(std::move(options)) {}

ReplicaForwarder::~ReplicaForwarder() { Gone(); }

void ReplicaForwarder::Update(uint32_t epoch, std::vector<uint32_t> backups) {
  std::vector<Backup> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (gone_) return;
    if (epoch == epoch_) return;
    old = std::move(backups_);
    backups_.clear();
    for (uint32_t n : backups) backups_.push_back({n, nullptr});
    epoch_ = epoch;
    failed_.clear();
    wrong_since_.clear();
  }
  changed_.notify_all();
  // The old epoch's links close outside the lock (a BYE each).
}

void ReplicaForwarder::Gone() {
  std::vector<Backup> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone_ = true;
    old = std::move(backups_);
    backups_.clear();
  }
  changed_.notify_all();
}

ReplicaForwarder::State ReplicaForwarder::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  State s;
  s.epoch = epoch_;
  for (const Backup& b : backups_) s.backups.push_back(b.node);
  s.failed = failed_;
  s.forwarded = forwarded_;
  return s;
}

Status ReplicaForwarder::Unknown(const std::string& why) const {
  return Status::Unavailable("shard '" + options_.keyspace + "': " + why +
                             ": the commit may or may not have been applied");
}

Status ReplicaForwarder::OpenLink(uint32_t node, uint32_t epoch,
                                  std::shared_ptr<PeerLink>* link) {
  Result<Endpoint> target = options_.resolve(node);
  if (!target.ok()) return target.status();
  PeerLink::Options o;
  o.target = *target;
  o.keyspace = options_.keyspace;
  o.peer_key = options_.peer_key;
  o.epoch = epoch;
  o.timeout = options_.link_timeout;
  Result<std::unique_ptr<PeerLink>> l = PeerLink::Open(o);
  if (!l.ok()) return l.status();
  *link = std::move(l).value();
  return Status::Ok();
}

Status ReplicaForwarder::LinksLocked(
    std::vector<std::pair<uint32_t, std::shared_ptr<PeerLink>>>* links,
    uint32_t* failed_node) {
  for (Backup& b : backups_) {
    if (b.link == nullptr) {
      Status st = OpenLink(b.node, epoch_, &b.link);
      if (!st.ok()) {
        *failed_node = b.node;
        return st;
      }
    }
    links->emplace_back(b.node, b.link);
  }
  return Status::Ok();
}

void ReplicaForwarder::FailedLocked(uint32_t epoch, uint32_t node,
                                    const Status& why) {
  for (Backup& b : backups_) {
    if (b.node == node) b.link.reset();  // a failed link is failed for good
  }
  if (std::find(failed_.begin(), failed_.end(), node) != failed_.end()) return;
  if (why.IsWrongShard()) {
    // The backup is at another epoch than this node: one of them has not
    // applied the newest map. Its failure only once that has had time.
    auto [it, first] = wrong_since_.try_emplace(node, Clock::now());
    if (Clock::now() - it->second < options_.link_timeout) return;
  }
  failed_.push_back(node);
  Logf(
      "shard '%s' epoch %u: backup %s failed: %s; commits wait for the "
      "replica set to change",
      options_.keyspace.c_str(), epoch, NodeName(node).c_str(),
      why.ToString().c_str());
  if (options_.report) options_.report(epoch, node, why);
}

Status ReplicaForwarder::Forward(const ForwardedRecord* records, size_t n) {
  return ForwardAround(records, n, [] { return Status::Ok(); });
}

Status ReplicaForwarder::ForwardAround(const ForwardedRecord* records, size_t n,
                                       const std::function<Status()>& local) {
  const auto deadline = Clock::now() + options_.max_wait;
  bool local_done = false;
  Status local_status;
  // The local persist, once, at the first chance.
  auto run_local = [&] {
    if (!local_done) {
      local_done = true;
      local_status = local();
    }
    return local_status;
  };
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (gone_) {
      (void)run_local();
      return Unknown(
          "the shard left this node while the commit was "
          "being replicated");
    }
    if (backups_.empty() || n == 0) {
      lock.unlock();
      return run_local();
    }
    const uint32_t epoch = epoch_;
    uint32_t failed_node = 0;
    Status st;
    if (failed_.empty()) {
      std::vector<std::pair<uint32_t, std::shared_ptr<PeerLink>>> links;
      st = LinksLocked(&links, &failed_node);
      if (st.ok()) {
        lock.unlock();
        // Every record to every backup, then one wait per backup: the
        // batch costs one round trip.
        std::vector<uint64_t> last(links.size(), 0);
        for (size_t l = 0; l < links.size() && st.ok(); l++) {
          for (size_t i = 0; i < n && st.ok(); i++) {
            Result<uint64_t> t =
                links[l].second->Submit(records[i].data, records[i].length);
            if (t.ok()) {
              last[l] = *t;
            } else {
              st = t.status();
              failed_node = links[l].first;
            }
          }
        }
        // The local persist while the records travel.
        const Status persisted = run_local();
        for (size_t l = 0; l < links.size() && st.ok(); l++) {
          st = links[l].second->WaitFor(last[l]);
          if (!st.ok()) failed_node = links[l].first;
        }
        lock.lock();
        if (!persisted.ok()) return persisted;
        if (st.ok()) {
          forwarded_ += n;
          return Status::Ok();
        }
      }
      if (epoch_ == epoch && !gone_) FailedLocked(epoch, failed_node, st);
    }
    // Wait for the replica set to change (or, after a wrong_shard, a
    // moment for the backup to apply the map), then try again.
    const bool waiting_for_map = !failed_.empty();
    const auto until = waiting_for_map
                           ? deadline
                           : std::min(deadline, Clock::now() + kEpochPause);
    changed_.wait_until(lock, until, [&] { return gone_ || epoch_ != epoch; });
    if (Clock::now() >= deadline && !gone_ && epoch_ == epoch) {
      std::string who;
      for (uint32_t f : failed_) who += (who.empty() ? "" : ", ") + NodeName(f);
      if (who.empty()) who = NodeName(failed_node);
      return Unknown("backup " + who +
                     " failed and the replica set did not change within " +
                     std::to_string(options_.max_wait.count()) + " ms");
    }
  }
}

}  // namespace kv::server
