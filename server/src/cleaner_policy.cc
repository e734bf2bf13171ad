#include "cleaner_policy.h"

#include <cstdlib>
#include <cstring>

#include "log.h"

namespace kv::server {
namespace {

// A test failpoint (server/README.md, "Failpoints"): with
// KVSERVER_FAILPOINT=no_expiry_sweep the cleaner never sweeps expired
// keys, so that a test can read an expired record the index still holds
// and see the client hide it by itself.
bool NoSweepFailpoint() {
  static const bool on = [] {
    const char* v = std::getenv("KVSERVER_FAILPOINT");
    return v != nullptr && std::strcmp(v, "no_expiry_sweep") == 0;
  }();
  return on;
}

}  // namespace

bool ShouldClean(const store::KeyspaceStats& s, double threshold) {
  const uint64_t used = s.live_bytes + s.dead_bytes;
  if (used == 0 || s.sealed_segments == 0) return false;
  return static_cast<double>(s.dead_bytes) >
         threshold * static_cast<double>(used);
}

CleanerPolicy::CleanerPolicy(KeyspaceTable* keyspaces, Stats* stats,
                             double threshold, std::chrono::milliseconds period)
    : keyspaces_(keyspaces),
      stats_(stats),
      threshold_(threshold),
      period_(period) {}

void CleanerPolicy::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    std::chrono::milliseconds wait = period_;
    while (!stop_) {
      cv_.wait_for(lock, wait, [this] { return stop_; });
      if (stop_) break;
      lock.unlock();
      const bool changed = RunOnce();
      lock.lock();
      wait =
          changed ? period_ : std::min(wait * 2, std::max(kIdleMax, period_));
    }
  });
}

void CleanerPolicy::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool CleanerPolicy::RunOnce() {
  bool changed = false;
  for (const std::shared_ptr<store::Keyspace>& k : keyspaces_->All()) {
    store::Keyspace& ks = *k;
    // Expired keys' slots cleared first (skipped cheaply while none can
    // have expired): their records become dead bytes that ShouldClean
    // counts and Clean reclaims.
    Result<uint64_t> expired = NoSweepFailpoint()
                                   ? Result<uint64_t>(uint64_t{0})
                                   : ks.ReclaimExpired();
    if (expired.ok() && *expired != 0) {
      Logf("cleaner: keyspace '%s': %llu expired keys reclaimed",
           ks.name().c_str(), static_cast<unsigned long long>(*expired));
    }
    const store::KeyspaceStats before = ks.Stats();
    const std::pair<uint64_t, uint64_t> seen = {
        before.live_bytes + before.dead_bytes, before.keys};
    auto [at, added] = last_seen_.try_emplace(ks.name(), seen);
    if (added || at->second != seen) changed = true;
    at->second = seen;
    if (expired.ok() && *expired != 0) changed = true;
    if (!ShouldClean(before, threshold_)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    Result<uint32_t> cleaned = ks.Clean(1.0 - threshold_);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    Stats::Add(stats_->cleaner_runs);
    if (!cleaned.ok()) {
      Stats::Add(stats_->cleaner_failures);
      // Logged once per distinct failure, not every period.
      std::string& last = last_failure_[ks.name()];
      if (last == cleaned.status().message()) continue;
      last = cleaned.status().message();
      Logf("cleaner: keyspace '%s': %s", ks.name().c_str(),
           cleaned.status().ToString().c_str());
      continue;
    }
    Stats::Add(stats_->cleaner_segments, *cleaned);
    last_failure_.erase(ks.name());
    if (*cleaned == 0) continue;
    changed = true;
    const store::KeyspaceStats after = ks.Stats();
    Logf(
        "cleaner: keyspace '%s': %u segments cleaned in %lld ms, dead bytes "
        "%llu -> %llu",
        ks.name().c_str(), *cleaned, static_cast<long long>(ms),
        static_cast<unsigned long long>(before.dead_bytes),
        static_cast<unsigned long long>(after.dead_bytes));
  }
  return changed;
}

}  // namespace kv::server
