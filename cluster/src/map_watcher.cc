#include "kv/cluster/map_watcher.h"

#include <utility>

namespace kv::cluster {

MapWatcher::MapWatcher(Etcd& etcd, Options options, EtcdKeys keys)
    : etcd_(etcd), options_(std::move(options)), keys_(std::move(keys)) {}

Result<std::unique_ptr<MapWatcher>> MapWatcher::Start(Etcd& etcd,
                                                      Options options) {
  Result<EtcdKeys> keys = EtcdKeys::ForCluster(options.cluster);
  if (!keys.ok()) return keys.status();
  if (options.poll.count() <= 0) {
    return Status::InvalidArgument("map watcher poll interval must be > 0");
  }
  std::unique_ptr<MapWatcher> w(
      new MapWatcher(etcd, std::move(options), std::move(keys).value()));
  Result<int64_t> read = w->Read();
  if (!read.ok()) return read.status();
  const int64_t from = *read + 1;
  w->thread_ = std::thread([raw = w.get(), from] { raw->Run(from); });
  return w;
}

MapWatcher::~MapWatcher() { Stop(); }

void MapWatcher::Stop() {
  std::lock_guard<std::mutex> one(stop_mu_);
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (watch_) watch_->Cancel();
  }
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const ClusterMap> MapWatcher::map() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_;
}

int64_t MapWatcher::revision() const {
  std::lock_guard<std::mutex> lock(mu_);
  return revision_;
}

Status MapWatcher::Offer(const std::string& json, int64_t mod_revision) {
  std::lock_guard<std::mutex> order(offer_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (mod_revision <= revision_) return Status::Ok();  // seen already
  }
  Result<ClusterMap> decoded = ClusterMap::Decode(json);
  if (!decoded.ok()) {
    Status st(decoded.status().code() == StatusCode::kInvalidArgument
                  ? StatusCode::kInvalidArgument
                  : StatusCode::kCorruption,
              "the cluster map at etcd revision " +
                  std::to_string(mod_revision) +
                  " is not valid (the last good one stays): " +
                  decoded.status().message());
    if (options_.on_error) options_.on_error(st);
    return st;
  }
  auto map = std::make_shared<const ClusterMap>(std::move(decoded).value());
  {
    std::lock_guard<std::mutex> lock(mu_);
    map_ = map;
    revision_ = mod_revision;
  }
  if (options_.on_map) options_.on_map(*map, mod_revision);
  return Status::Ok();
}

Result<int64_t> MapWatcher::Read() {
  Result<Range> r = etcd_.Get(keys_.map());
  if (!r.ok()) return r.status();
  if (!r->kvs.empty()) {
    (void)Offer(r->kvs.front().value, r->kvs.front().mod_revision);
  }
  return r->revision;
}

Result<std::shared_ptr<const ClusterMap>> MapWatcher::Refresh() {
  Result<Range> r = etcd_.Get(keys_.map());
  if (!r.ok()) return r.status();
  if (!r->kvs.empty()) {
    Status st = Offer(r->kvs.front().value, r->kvs.front().mod_revision);
    if (!st.ok()) return st;
  }
  return map();
}

void MapWatcher::Run(int64_t from) {
  while (!stop_.load()) {
    Result<std::unique_ptr<EtcdWatch>> opened = etcd_.Watch(keys_.map(), from);
    if (!opened.ok()) {
      if (options_.on_error) options_.on_error(opened.status());
      std::this_thread::sleep_for(options_.poll);
      continue;
    }
    EtcdWatch* watch = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      watch_ = std::move(opened).value();
      watch = watch_.get();
      if (stop_.load()) watch_->Cancel();
    }
    bool reread = false;
    while (!stop_.load() && !reread) {
      Result<std::vector<WatchEvent>> events = watch->Next(options_.poll);
      if (!events.ok()) {
        // Compacted: read again and watch from there. Other errors: the
        // watch reconnects by itself on the next call.
        if (events.status().IsNotFound()) reread = true;
        if (!stop_.load() && options_.on_error) {
          options_.on_error(events.status());
        }
        if (!reread) std::this_thread::sleep_for(options_.poll);
        continue;
      }
      for (const WatchEvent& e : *events) {
        if (e.type == WatchEvent::Type::kPut) {
          (void)Offer(e.value, e.mod_revision);
        } else if (options_.on_error) {
          options_.on_error(Status::NotFound(
              "the cluster map key was deleted at etcd revision " +
              std::to_string(e.mod_revision) + " (the last good map stays)"));
        }
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      watch_.reset();
    }
    while (reread && !stop_.load()) {
      Result<int64_t> read = Read();
      if (read.ok()) {
        from = *read + 1;
        break;
      }
      if (options_.on_error) options_.on_error(read.status());
      std::this_thread::sleep_for(options_.poll);
    }
  }
}

}  // namespace kv::cluster
