// kv::Router: a kv::Client in cluster mode (ClientOptions::cluster;
// docs/cluster.md, "The client"). It follows the cluster map in etcd
// (kv::cluster::MapWatcher: read once, then watched), routes each key by
// its slot (kv/cluster_slots.h) to its shard, and keeps one single-server
// kv::Client per shard, connected lazily to the shard's primary (its
// address from the node's registration) with the shard's map epoch.
//
// Retries. A request the server refused with wrong_shard was not applied
// (the check comes before the decision), and a connect that failed sent
// nothing: both re-read the map and go again, with a short growing pause,
// until the operation's timeout (ClientOptions::op_timeout). Anything
// else is returned as is — a connection lost with a write in flight is
// unavailable (outcome unknown), never retried; one whose COMMIT never
// left comes back from the shard's client as wrong_shard, and is sent
// again — and the shard's client is dropped so that the next call
// connects again.
//
// Thread-safety: every method from any thread; operations on different
// shards run in parallel (each shard's client serializes its own).
#ifndef KV_CLIENT_SRC_ROUTER_H_
#define KV_CLIENT_SRC_ROUTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kv/client/client.h"
#include "kv/status.h"

namespace kv::cluster {
class ClusterMap;
class EtcdHttp;
class MapWatcher;
}  // namespace kv::cluster

namespace kv {

class Router {
 public:
  // Opens the etcd client, reads the map and the node registrations.
  // Errors: invalid_argument (endpoints, cluster name, keyspace name);
  // unavailable / timed_out (etcd unreachable: the message names the
  // endpoints); not_found (the map has no such keyspace, or no map).
  static Result<std::unique_ptr<Router>> Open(const ClientOptions& options);
  ~Router();

  // Runs `fn` on the client of `key`'s shard, with the retries above.
  // `read_only`: fn changes nothing (a get), so a broken connection is
  // retried too (a hand-off's disconnect can flush a one-sided read in
  // flight before the ERROR that names it is seen); a write's outcome is
  // unknown then, and it is not retried. A read's result is kept only if
  // the map names the same primary and epoch after it as before (a
  // deposed primary's process, resumed, may still serve one-sided reads).
  Status OnKey(std::string_view key, const std::function<Status(Client&)>& fn,
               bool read_only = false);

  // One shard's part of a batch: the indexes (into the caller's batch)
  // of the operations routed to it.
  struct Part {
    std::string shard;  // pool keyspace name
    std::vector<size_t> ops;
  };
  // Groups keys by shard under the current map.
  std::vector<Part> Split(const std::vector<std::string_view>& keys);
  // The client of shard `shard` (connecting if needed) or an error; a
  // refusal re-reads the map (the caller decides whether to retry).
  Result<std::shared_ptr<Client>> ClientOf(const std::string& shard);
  // After a wrong_shard or a lost connection: drop the shard's client and
  // re-read the map.
  void Invalidate(const std::string& shard);

  // Every shard of the keyspace, in map order (for Scan and Info).
  std::vector<std::string> Shards();

  // The cluster forms of Client's calls (router_ops.cc).
  Status Execute(Batch* batch);
  Status Scan(
      std::string_view prefix, size_t limit,
      const std::function<bool(std::string_view, std::string_view)>& fn);
  Result<uint64_t> ScanPage(
      uint64_t cursor, std::string_view prefix, size_t count,
      const std::function<void(std::string_view, std::string_view)>& fn);
  Result<std::string> Info(Client::InfoTopic topic);
  Result<std::chrono::nanoseconds> Ping();

  // Sums of the shards' client stats.
  ClientStats stats();
  uint32_t max_value_size();

  const ClientOptions& options() const { return options_; }

 private:
  struct Route {
    std::string shard;  // pool keyspace name
    uint32_t node = 0;
    uint32_t epoch = 0;
  };
  struct Conn {
    uint32_t node = 0;
    uint32_t epoch = 0;
    std::shared_ptr<Client> client;
  };
  explicit Router(ClientOptions options);
  Result<Route> RouteOf(std::string_view key);
  Result<Route> RouteOfShard(const std::string& shard);
  // Whether the map now names another primary or epoch for before.shard
  // than `before` (false if the shard left the map: the next call finds
  // that out).
  bool ChangedHands(const Route& before);
  Status ReadNodes();
  Result<std::shared_ptr<Client>> Connect(const Route& r);

  const ClientOptions options_;
  std::unique_ptr<cluster::EtcdHttp> etcd_;
  std::unique_ptr<cluster::MapWatcher> watcher_;
  std::mutex mu_;
  std::map<uint32_t, std::string> addresses_;  // node id -> host:port
  std::map<std::string, Conn, std::less<>> conns_;
  uint32_t max_value_size_ = 0;  // of the first shard connected
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_ROUTER_H_
