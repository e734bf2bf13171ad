// kv::server::CleanerPolicy — when the cleaner runs: a background thread
// looks at every open keyspace every `period`, runs its expiry sweep
// (Keyspace::ReclaimExpired: expired keys' slots cleared, their records
// dead bytes; a no-op until the earliest expiry), and when its dead bytes
// pass `threshold` of live + dead (and a sealed segment can be
// reclaimed), runs Keyspace::Clean on the segments at most
// 1 - threshold live. Gets keep working meanwhile (clients detect moved
// records and retry). Each run is logged. A pass that finds nothing
// changed since the last one (no keyspace's bytes moved, nothing swept or
// cleaned) doubles the wait before the next, up to kIdleMax; any change
// brings it back to `period`, so an idle server wakes this thread about
// once every 1.6 s instead of five times a second.
// Thread-safety: Start/Stop from one thread.
#ifndef KV_SERVER_CLEANER_POLICY_H_
#define KV_SERVER_CLEANER_POLICY_H_

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "keyspace_table.h"
#include "stats.h"

namespace kv::server {

// Whether a keyspace with these stats should be cleaned now.
bool ShouldClean(const store::KeyspaceStats& s, double threshold);

class CleanerPolicy {
 public:
  CleanerPolicy(KeyspaceTable* keyspaces, Stats* stats, double threshold,
                std::chrono::milliseconds period);
  ~CleanerPolicy() { Stop(); }
  void Start();
  // Waits for a run in progress to finish.
  void Stop();
  static constexpr std::chrono::milliseconds kIdleMax{1600};
  // One pass over every open keyspace (the thread's body; tests). Returns
  // whether anything changed since the previous pass.
  bool RunOnce();

 private:
  KeyspaceTable* const keyspaces_;
  Stats* const stats_;
  const double threshold_;
  const std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::map<std::string, std::string> last_failure_;  // RunOnce's thread only
  // Each keyspace's live + dead bytes and keys at the last pass.
  std::map<std::string, std::pair<uint64_t, uint64_t>> last_seen_;
};

}  // namespace kv::server

#endif  // KV_SERVER_CLEANER_POLICY_H_
