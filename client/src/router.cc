#include "router.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "kv/cluster/cluster_map.h"
#include "kv/cluster/etcd_http.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/map_watcher.h"
#include "kv/cluster/node_registration.h"
#include "kv/cluster_slots.h"
#include "kv/index_format.h"
#include "kv/keyspace_name.h"

namespace kv {

Router::Router(ClientOptions options) : options_(std::move(options)) {}

Router::~Router() {
  if (watcher_) watcher_->Stop();
}

Result<std::unique_ptr<Router>> Router::Open(const ClientOptions& options) {
  KV_RETURN_IF_ERROR(ValidateKeyspaceName(options.keyspace));
  if (options.keyspace.size() > kMaxClusterKeyspaceNameSize) {
    return Status::InvalidArgument("a cluster keyspace name has at most " +
                                   std::to_string(kMaxClusterKeyspaceNameSize) +
                                   " bytes");
  }
  std::unique_ptr<Router> r(new Router(options));
  Result<std::unique_ptr<cluster::EtcdHttp>> etcd =
      cluster::EtcdHttp::Open(options.cluster);
  if (!etcd.ok()) return etcd.status();
  r->etcd_ = std::move(etcd).value();
  cluster::MapWatcher::Options w;
  w.cluster = options.cluster_name;
  Result<std::unique_ptr<cluster::MapWatcher>> watcher =
      cluster::MapWatcher::Start(*r->etcd_, w);
  if (!watcher.ok()) {
    return Status(watcher.status().code(), "reading the cluster map from " +
                                               options.cluster + ": " +
                                               watcher.status().message());
  }
  r->watcher_ = std::move(watcher).value();
  std::shared_ptr<const cluster::ClusterMap> map = r->watcher_->map();
  if (map == nullptr) {
    return Status::NotFound("cluster '" + options.cluster_name + "' at " +
                            options.cluster +
                            " has no map yet (is a kvserver --cluster "
                            "running? kvadmin cluster status)");
  }
  if (map->Find(options.keyspace) == nullptr) {
    return Status::NotFound("keyspace '" + options.keyspace +
                            "' is not in cluster '" + options.cluster_name +
                            "' (kvadmin cluster create-keyspace makes one)");
  }
  KV_RETURN_IF_ERROR(r->ReadNodes());
  return r;
}

Status Router::ReadNodes() {
  Result<cluster::EtcdKeys> keys =
      cluster::EtcdKeys::ForCluster(options_.cluster_name);
  if (!keys.ok()) return keys.status();
  Result<cluster::Range> nodes = etcd_->GetPrefix(keys->nodes_prefix());
  if (!nodes.ok()) return nodes.status();
  std::map<uint32_t, std::string> addresses;
  for (const cluster::KeyValue& kv : nodes->kvs) {
    // Hostile or stale entries are skipped: a node not found is simply
    // unreachable, and the op says so.
    Result<uint32_t> id = keys->NodeIdOf(kv.key);
    Result<cluster::NodeRegistration> reg =
        cluster::NodeRegistration::Decode(kv.value);
    if (!id.ok() || !reg.ok() || reg->node_id != *id) continue;
    addresses[*id] = reg->address;
  }
  std::lock_guard<std::mutex> lock(mu_);
  addresses_ = std::move(addresses);
  return Status::Ok();
}

Result<Router::Route> Router::RouteOf(std::string_view key) {
  std::shared_ptr<const cluster::ClusterMap> map = watcher_->map();
  const cluster::KeyspaceShards* ks =
      map ? map->Find(options_.keyspace) : nullptr;
  if (ks == nullptr) {
    return Status::NotFound("keyspace '" + options_.keyspace +
                            "' is no longer in the cluster map");
  }
  const cluster::Shard* s = map->ShardFor(*ks, index_format::HashKey(key));
  return Route{ShardKeyspaceName(ks->name, s->id), s->primary(), s->epoch};
}

Result<Router::Route> Router::RouteOfShard(const std::string& shard) {
  std::shared_ptr<const cluster::ClusterMap> map = watcher_->map();
  const cluster::KeyspaceShards* ks =
      map ? map->Find(options_.keyspace) : nullptr;
  if (ks != nullptr) {
    for (const cluster::Shard& s : ks->shards) {
      if (ShardKeyspaceName(ks->name, s.id) == shard) {
        return Route{shard, s.primary(), s.epoch};
      }
    }
  }
  return Status::WrongShard("shard '" + shard +
                            "' is not in the cluster map any more");
}

bool Router::ChangedHands(const Route& before) {
  Result<Route> after = RouteOfShard(before.shard);
  return after.ok() &&
         (after->node != before.node || after->epoch != before.epoch);
}

std::vector<std::string> Router::Shards() {
  std::vector<std::string> out;
  std::shared_ptr<const cluster::ClusterMap> map = watcher_->map();
  const cluster::KeyspaceShards* ks =
      map ? map->Find(options_.keyspace) : nullptr;
  if (ks == nullptr) return out;
  for (const cluster::Shard& s : ks->shards) {
    out.push_back(ShardKeyspaceName(ks->name, s.id));
  }
  return out;
}

Result<std::shared_ptr<Client>> Router::Connect(const Route& r) {
  std::string address;
  for (int pass = 0; pass < 2 && address.empty(); pass++) {
    if (pass == 1) KV_RETURN_IF_ERROR(ReadNodes());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = addresses_.find(r.node);
    if (it != addresses_.end()) address = it->second;
  }
  if (address.empty()) {
    return Status::Unavailable("node " + std::to_string(r.node) +
                               ", the primary of shard '" + r.shard +
                               "', is not registered in the cluster (down "
                               "or left)");
  }
  ClientOptions o = options_;
  o.cluster.clear();
  o.server = address;
  o.keyspace = r.shard;
  o.create_if_missing = false;
  o.map_epoch = r.epoch;
  Result<std::unique_ptr<Client>> c = Client::Connect(o);
  if (!c.ok()) return c.status();
  return std::shared_ptr<Client>(std::move(c).value());
}

Result<std::shared_ptr<Client>> Router::ClientOf(const std::string& shard) {
  Result<Route> r = RouteOfShard(shard);
  if (!r.ok()) return r.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(shard);
    if (it != conns_.end() && it->second.node == r->node &&
        it->second.epoch == r->epoch) {
      return it->second.client;
    }
  }
  Result<std::shared_ptr<Client>> c = Connect(*r);
  if (!c.ok()) return c.status();
  std::lock_guard<std::mutex> lock(mu_);
  Conn& slot = conns_[shard];
  slot.node = r->node;
  slot.epoch = r->epoch;
  slot.client = *c;
  if (max_value_size_ == 0) max_value_size_ = (*c)->max_value_size();
  return slot.client;
}

void Router::Invalidate(const std::string& shard) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns_.erase(shard);
  }
  (void)watcher_->Refresh();
  (void)ReadNodes();
}

std::vector<Router::Part> Router::Split(
    const std::vector<std::string_view>& keys) {
  std::vector<Part> parts;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < keys.size(); i++) {
    Result<Route> r = RouteOf(keys[i]);
    const std::string shard = r.ok() ? r->shard : std::string();
    auto [it, fresh] = index.emplace(shard, parts.size());
    if (fresh) parts.push_back(Part{shard, {}});
    parts[it->second].ops.push_back(i);
  }
  return parts;
}

namespace {

// Nothing was applied: a refusal before the decision, or no connection.
bool SafeToRetry(const Status& st) {
  return st.IsWrongShard() || st.code() == StatusCode::kUnavailable ||
         st.code() == StatusCode::kTimedOut;
}

}  // namespace

Status Router::OnKey(std::string_view key,
                     const std::function<Status(Client&)>& fn, bool read_only) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + options_.op_timeout;
  std::chrono::milliseconds pause{5};
  for (;;) {
    Result<Route> r = RouteOf(key);
    if (!r.ok()) return r.status();
    Status st;
    bool retry = false;
    Result<std::shared_ptr<Client>> c = ClientOf(r->shard);
    if (!c.ok()) {
      st = c.status();
      retry = SafeToRetry(st);  // the op was never sent
      if (retry) Invalidate(r->shard);
    } else {
      st = fn(**c);
      if (read_only && (st.ok() || st.IsNotFound())) {
        // A one-sided read needs no CPU of the server's: a deposed primary
        // (a stopped process resuming after a failover) may still serve
        // it. Kept only if the map names the same primary and epoch after
        // the read as before; else read again at the new one.
        Result<Route> after = RouteOf(key);
        if (after.ok() &&
            (after->node != r->node || after->epoch != r->epoch)) {
          Invalidate(r->shard);
          st = Status::WrongShard("the shard changed hands during the read");
        }
      }
      if (st.IsWrongShard()) {
        retry = true;
        Invalidate(r->shard);
      } else if (st.code() == StatusCode::kUnavailable ||
                 st.code() == StatusCode::kTimedOut) {
        // The connection broke, or went silent past the op timeout (a
        // failed connection stays failed): the next call connects again.
        // A write's outcome is unknown, so it is not retried here; a read
        // is.
        retry = read_only;
        std::lock_guard<std::mutex> lock(mu_);
        conns_.erase(r->shard);
      }
    }
    if (!retry || Clock::now() + pause > deadline) return st;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

ClientStats Router::stats() {
  std::vector<std::shared_ptr<Client>> clients;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, conn] : conns_) clients.push_back(conn.client);
  }
  ClientStats sum;
  for (const std::shared_ptr<Client>& c : clients) {
    const ClientStats s = c->stats();
    sum.gets_one_round_trip += s.gets_one_round_trip;
    sum.gets_cold += s.gets_cold;
    sum.get_retries += s.get_retries;
    sum.index_refreshes += s.index_refreshes;
    sum.puts += s.puts;
    sum.deletes += s.deletes;
    sum.refills += s.refills;
  }
  return sum;
}

uint32_t Router::max_value_size() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (max_value_size_ != 0) return max_value_size_;
  }
  const std::vector<std::string> shards = Shards();
  if (!shards.empty()) (void)ClientOf(shards.front());
  std::lock_guard<std::mutex> lock(mu_);
  return max_value_size_;
}

}  // namespace kv
