// kv::cluster::Election: the campaign for the one active controller
// (docs/cluster.md, "The controller").
//
// A candidate grants its own lease (a LeaseKeeper: the same deadline rule
// as a node's membership) and creates /rpkv/<cluster>/controller holding
// its node id on that lease, in a transaction that succeeds only while the
// key is absent. Losing, it watches the key (from the revision it read
// + 1, re-reading after a compaction) and tries again when it is deleted
// (resigned, or its holder's lease expired). Winning, it leads until its
// lease deadline passes without a renewal, etcd reports the lease gone,
// the key changes under it, or Resign().
//
// Leading(now) is the check to make right before acting as the leader;
// it is false from the lease deadline on, which is before etcd can expire
// the lease and so before anyone else can win. Writes the leader makes
// should also carry Guard(term) in their transaction, so etcd refuses
// them once the key is no longer this term's.
//
// One thread per Election runs the campaign. Thread-safety: every method
// from any thread. `etcd` and the clock must outlive the Election.
#ifndef KV_CLUSTER_ELECTION_H_
#define KV_CLUSTER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kv/cluster/clock.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/lease_keeper.h"
#include "kv/status.h"

namespace kv::cluster {

class Election {
 public:
  struct Options {
    std::string cluster;  // etcd_keys.h rules
    uint32_t node_id = 0;
    LeaseKeeper::Options lease;  // TTL 5 s, margin max(500 ms, TTL/10)
    Clock* clock = nullptr;      // nullptr: a SteadyClock of its own
    // Real-time bound on one wait of the campaign thread (a watch's Next,
    // a retry after an etcd error): how fast Resign() and a lost lease are
    // noticed by the thread. Leading() does not depend on it.
    std::chrono::milliseconds poll{100};
  };

  // One leadership: the election key's create revision (etcd's proof that
  // this candidate won at that revision) and the lease it is on.
  struct Term {
    int64_t revision = 0;
    int64_t lease = 0;
  };

  // Starts campaigning (returns at once; the thread does the work).
  // Errors: invalid_argument for a bad cluster name, node id 0, or a poll
  // interval that is not positive.
  static Result<std::unique_ptr<Election>> Start(Etcd& etcd, Options options);

  ~Election();  // Resign(), ignoring its error
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // The current term when this candidate leads and `now` is before its
  // lease deadline; nullopt otherwise.
  std::optional<Term> Leading(Clock::TimePoint now) const;

  // The compare to put in every transaction the leader makes: the
  // election key is still the one this term created.
  Compare Guard(const Term& term) const;

  // Waits (real time, at most `timeout`) until this candidate leads.
  // Returns whether it does (by its clock's Now()).
  bool WaitLeading(std::chrono::milliseconds timeout) const;

  // Leaves the election for good: stops the campaign, and when leading
  // stops acting first, then deletes the key guarded by its create
  // revision and revokes the lease, so another candidate may win at once.
  // Idempotent. Errors: those of etcd's Txn (unavailable, ...): the key
  // then goes when the lease expires (within one TTL).
  Status Resign();

  const std::string& key() const { return key_; }
  Clock& clock() const { return *clock_; }
  // How many terms this candidate has won (for tests and logs).
  int terms_won() const { return terms_won_.load(); }

 private:
  Election(Etcd& etcd, Options options, std::string key,
           std::unique_ptr<Clock> own_clock);
  void Run();
  // One attempt to win; returns the term on success.
  Result<std::optional<Term>> TryWin();
  // Watches the key from `from` until it is deleted (or a reason to stop
  // waiting: stop, a lost lease, a compaction, an etcd error).
  void WaitForVacancy(int64_t from);
  // Leads until the term ends; then clears it.
  void Lead(const Term& term);
  // Sleeps `poll` (real time) unless stopping.
  void Pause();
  // Opens a watch of the key from `from`, registered so that Resign() can
  // cancel it. nullptr on error (after a pause).
  std::unique_ptr<EtcdWatch> OpenWatch(int64_t from);
  void CloseWatch();

  Etcd& etcd_;
  const Options options_;
  const std::string key_;
  std::unique_ptr<Clock> own_clock_;
  Clock* const clock_;
  std::atomic<int> terms_won_{0};

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // term_ set, or stop_
  std::optional<Term> term_;            // guarded by mu_
  EtcdWatch* watch_ = nullptr;          // guarded by mu_; for Cancel()
  // Replaced only by the campaign thread, under mu_; read by Leading().
  std::unique_ptr<LeaseKeeper> keeper_;
  std::atomic<bool> stop_{false};
  std::mutex resign_mu_;  // one Resign() at a time
  std::thread thread_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ELECTION_H_
