// kv::cluster::MapWatcher: follows a cluster's map in etcd
// (docs/cluster.md, "Following the map"). A node uses it to learn which
// shards it serves; a client to route keys.
//
// Start() reads the map once (so map() is set when it returns, if etcd
// holds a valid one) and then a thread watches the map key from that
// read's revision + 1; every new map that decodes is published (map())
// and handed to `on_map`, in revision order. A map that does not decode
// (anyone with etcd access can write garbage) is reported to `on_error`
// and skipped: the last good map stays. After a compaction or a broken
// watch the thread re-reads and watches again; a deleted map key leaves
// the last good map in place (reported).
//
// Refresh() reads the map now (a client that met wrong_shard) and
// publishes it when it is newer than the one held.
//
// Thread-safety: every method from any thread. Callbacks run on the
// watcher's thread, or on the thread calling Start()/Refresh(); they
// must not call Stop(). `etcd` must outlive the watcher.
#ifndef KV_CLUSTER_MAP_WATCHER_H_
#define KV_CLUSTER_MAP_WATCHER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/status.h"

namespace kv::cluster {

class MapWatcher {
 public:
  struct Options {
    std::string cluster = "rpkv";  // etcd_keys.h rules
    // Bound on one wait: how fast Stop() returns.
    std::chrono::milliseconds poll{200};
    std::function<void(const ClusterMap&, int64_t revision)> on_map;
    std::function<void(const Status&)> on_error;
  };

  // Errors: invalid_argument (cluster name, poll not positive); those of
  // the first read (unavailable, timed_out) — a map that is absent or
  // does not decode is not an error here (map() is then null).
  static Result<std::unique_ptr<MapWatcher>> Start(Etcd& etcd, Options options);
  ~MapWatcher();  // Stop()

  void Stop();

  // The newest good map and the etcd revision it was written at (its
  // key's mod revision); null / 0 before any.
  std::shared_ptr<const ClusterMap> map() const;
  int64_t revision() const;

  // Reads the map now; publishes it when newer. Returns the map held
  // afterwards (null: none yet). Errors: those of the read; corruption
  // when etcd's map does not decode (the held one stays).
  Result<std::shared_ptr<const ClusterMap>> Refresh();

 private:
  MapWatcher(Etcd& etcd, Options options, EtcdKeys keys);
  void Run(int64_t from);
  // Decodes and publishes `json` written at `mod_revision` if newer.
  Status Offer(const std::string& json, int64_t mod_revision);
  // Reads the map key; returns the read's revision (to watch from + 1).
  Result<int64_t> Read();

  Etcd& etcd_;
  const Options options_;
  const EtcdKeys keys_;
  mutable std::mutex mu_;
  std::shared_ptr<const ClusterMap> map_;  // guarded by mu_
  int64_t revision_ = 0;                   // guarded by mu_
  std::mutex offer_mu_;               // one Offer at a time: callbacks in order
  std::unique_ptr<EtcdWatch> watch_;  // guarded by mu_ (Cancel from Stop)
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::thread thread_;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_MAP_WATCHER_H_
