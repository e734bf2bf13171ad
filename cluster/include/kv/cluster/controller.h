// kv::cluster::Controller: the one active controller of a cluster
// (docs/cluster.md, "The controller"). Any node may run one; an Election
// (election.h) makes exactly one of them act.
//
// While elected, a pass reads everything under /rpkv/<cluster>/ at one
// revision (the map, the node registrations, the desired keyspaces under
// keyspaces/ added to Options::desired, the move records under moves/ and
// the drain keys under drain/) and decides (src/controller_plan.h):
//  1. the next map (placement.h: repair shards on dead nodes, create
//     desired keyspaces), written when it differs, guarded by the map
//     key's mod revision as read (absence when there was none);
//  2. otherwise the steps of the live moves (move_steps.h): ready ->
//     handoff; released -> the switch (the map gives the shard to the
//     target at epoch + 1 and the record and its progress are deleted, in
//     one transaction guarded by the map's and the record's mod
//     revisions); cancel (or delete) the moves whose nodes died;
//  3. then the moves to start (move_planner.h): drain the nodes with a
//     drain key and, with Options::rebalance, even out the load, at most
//     Options::max_moves records in flight. Rebalancing never rewrites
//     the map without moving the data.
// Every write is a transaction also guarded by the election key
// (Election::Guard). A lost race — someone else changed what a write was
// decided on — means re-read and decide again. Between passes it watches
// the cluster prefix from the read's revision + 1, so a node that joins or
// whose lease expires, a map change, a move's phase, a drain key start a
// new pass (progress reports do not); on compaction it re-reads.
//
// A map in etcd that does not decode is never overwritten: the controller
// reports it (last_error()) and waits for a person to fix it. Any other
// key that does not decode (a desired keyspace, a move record, a drain
// key) is reported (last_problems) and skipped; the pass goes on with the
// others. An undecodable move record is never overwritten either, and no
// other move of its shard starts while it is there.
//
// One thread. Thread-safety: every method from any thread. `etcd` and the
// clock must outlive the Controller.
#ifndef KV_CLUSTER_CONTROLLER_H_
#define KV_CLUSTER_CONTROLLER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv/cluster/clock.h"
#include "kv/cluster/election.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/placement.h"
#include "kv/status.h"

namespace kv::cluster {

struct ControllerWrite;  // src/controller_plan.h

class Controller {
 public:
  struct Options {
    std::string cluster;  // etcd_keys.h rules
    uint32_t node_id = 0;
    // Desired keyspaces besides those under /rpkv/<cluster>/keyspaces/
    // (keyspace_spec.h); on a name conflict these win.
    std::vector<KeyspaceSpec> desired;
    // Start live moves (move_planner.h) from the most to the least loaded
    // node while they differ by 2 or more. Never a map-only change.
    bool rebalance = false;
    // Move records in flight, cluster-wide, beyond which neither drains
    // nor rebalancing start another (kvadmin's moves count too, but
    // kvadmin is never refused). 0: the controller starts none.
    uint32_t max_moves = 1;
    LeaseKeeper::Options lease;  // of the election
    Clock* clock = nullptr;      // nullptr: a SteadyClock of its own
    // Real-time bound on one wait (a watch's Next, a retry after an etcd
    // error): how fast Stop() returns and lost leadership is noticed.
    std::chrono::milliseconds poll{100};
    // Lost transaction races in one pass before it gives up and waits
    // for the next change (another writer is busy).
    int max_txn_attempts = 5;
  };

  // Checks the options and starts the election and the thread.
  // Errors: invalid_argument for a bad cluster name, node id 0, a desired
  // keyspace PlanPlacement would refuse, a poll interval or attempt count
  // that is not positive.
  static Result<std::unique_ptr<Controller>> Start(Etcd& etcd, Options options);

  ~Controller();  // Stop()

  // Ends the thread promptly (within about one poll interval plus one etcd
  // call in flight) and resigns from the election. Idempotent.
  void Stop();

  const Election& election() const { return *election_; }

  // For logs, `kvadmin cluster status` later and tests.
  struct Stats {
    int passes = 0;      // reads-and-plans done while leading
    int writes = 0;      // transactions that succeeded (map and moves)
    int lost_races = 0;  // transactions refused by their guard
    std::vector<std::string> last_changes;   // of the last pass that wrote
    std::vector<std::string> last_problems;  // of the last pass
    std::string last_error;                  // empty when the last pass was ok
  };
  Stats stats() const;

 private:
  Controller(Etcd& etcd, Options options, EtcdKeys keys,
             std::unique_ptr<Clock> own_clock);
  void Run();
  // One pass: read, plan, write (retrying lost races). Returns the
  // revision to watch from (read revision + 1), or 0 after an error.
  int64_t Pass(const Election::Term& term);
  enum class WriteOutcome { kDone, kLostRace, kFailed };
  // Makes `writes` in order, each with the election guard, until one
  // fails (kFailed: an etcd error or the term ended) or loses its race.
  WriteOutcome Write(const Election::Term& term,
                     const std::vector<ControllerWrite>& writes);
  // Waits for a change under the prefix since `from`, at most one poll.
  // Returns false when a re-read is due now (change, compaction, error).
  bool Quiet(int64_t from);
  void Fail(const std::string& error);
  Etcd& etcd_;
  const Options options_;
  const EtcdKeys keys_;
  std::unique_ptr<Clock> own_clock_;
  Clock* const clock_;
  std::unique_ptr<Election> election_;

  mutable std::mutex mu_;
  Stats stats_;                       // guarded by mu_
  std::unique_ptr<EtcdWatch> watch_;  // guarded by mu_ (Cancel from Stop)
  int64_t watch_from_ = 0;            // thread only
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;  // one Stop() joins
  std::thread thread_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CONTROLLER_H_
