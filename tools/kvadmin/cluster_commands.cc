#include "cluster_commands.h"

#include <ostream>
#include <thread>

#include "cluster_status_json.h"
#include "cluster_view.h"
#include "commands.h"
#include "kv/cluster/etcd_http.h"

namespace kv::kvadmin {
namespace {

using cluster::ClusterMap;
using cluster::KeyspaceShards;
using cluster::KeyspaceSpec;
using std::chrono::milliseconds;

// How often the wait re-reads the cluster: quick enough that the answer
// shows soon after the controller's write, light on etcd.
constexpr milliseconds kPollInterval{200};

void PrintPlaced(const ClusterView& v, const KeyspaceShards& ks,
                 std::ostream& out) {
  out << "keyspace " << ks.name << ": id " << ks.id << ", " << ks.shards.size()
      << (ks.shards.size() == 1 ? " shard" : " shards") << "\n";
  PrintShards(v, ks, out);
}

}  // namespace

Result<ClusterTarget> OpenClusterTarget(const std::string& url,
                                        const std::string& cluster_name) {
  Result<cluster::EtcdKeys> keys = cluster::EtcdKeys::ForCluster(cluster_name);
  if (!keys.ok()) {
    return Status::InvalidArgument("--cluster_name: " +
                                   keys.status().message());
  }
  Result<std::unique_ptr<cluster::EtcdHttp>> etcd =
      cluster::EtcdHttp::Open(url);
  if (!etcd.ok()) {
    return Status::InvalidArgument("--cluster: " + etcd.status().message());
  }
  return ClusterTarget{url, std::move(*etcd), std::move(*keys)};
}

int ClusterStatus(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                  std::ostream& out, std::ostream& err, bool json) {
  Result<ClusterView> v = ReadClusterView(etcd, keys);
  if (!v.ok()) return Fail(err, v.status());
  if (json) {
    out << ClusterStatusJson(*v, keys) << "\n";
  } else {
    out << "cluster " << keys.cluster() << " (etcd revision " << v->revision
        << ")\n";
    PrintClusterStatus(*v, out);
  }
  if (!v->map_error.ok()) return ReportMapUnreadable(*v, keys, err);
  return kExitOk;
}

int ClusterCreateKeyspace(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                          const KeyspaceSpec& spec, milliseconds wait,
                          std::ostream& out, std::ostream& err) {
  if (Status st = spec.Validate(); !st.ok()) {
    err << "kvadmin: " << st.message() << "\n";
    return kExitUsage;
  }
  Result<ClusterView> before = ReadClusterView(etcd, keys);
  if (!before.ok()) return Fail(err, before.status());
  if (!before->map_error.ok()) return ReportMapUnreadable(*before, keys, err);
  if (before->map && before->map->Find(spec.name) != nullptr) {
    err << "kvadmin: keyspace '" << spec.name
        << "' already exists in the cluster map (nothing changed)\n";
    PrintPlaced(*before, *before->map->Find(spec.name), err);
    return kExitFailed;
  }
  // Absent-only: two kvadmins asking at once cannot both think they made
  // it, and an existing request (perhaps with other counts) is kept.
  const std::string key = keys.keyspace(spec.name);
  Result<cluster::TxnResult> t =
      etcd.Txn({cluster::Compare::Absent(key)},
               {cluster::TxnOp::Put(key, spec.Encode())}, {});
  if (!t.ok()) return Fail(err, t.status());
  if (!t->succeeded) {
    Result<cluster::Range> r = etcd.Get(key);
    std::string have;
    if (r.ok() && !r->kvs.empty()) {
      Result<KeyspaceSpec> old =
          KeyspaceSpec::Decode(spec.name, r->kvs[0].value);
      have = " (" + (old.ok() ? SpecText(*old) : old.status().message()) + ")";
    }
    err << "kvadmin: keyspace '" << spec.name
        << "' already exists: it is desired at " << key << have
        << ", not yet in the map (nothing changed; kvadmin cluster status "
           "shows it as pending)\n";
    return kExitFailed;
  }
  err << "kvadmin: asked for keyspace '" << spec.name << "' (" << SpecText(spec)
      << ") at " << key << "\n";
  if (wait.count() == 0) return kExitOk;

  const auto start = std::chrono::steady_clock::now();
  auto next_progress = start + std::chrono::seconds(1);
  ClusterView last;
  for (;;) {
    Result<ClusterView> v = ReadClusterView(etcd, keys);
    const auto now = std::chrono::steady_clock::now();
    if (v.ok()) {
      last = std::move(*v);
      if (last.map) {
        if (const KeyspaceShards* ks = last.map->Find(spec.name)) {
          PrintPlaced(last, *ks, out);
          return kExitOk;
        }
      }
    }
    if (now - start >= wait) break;
    if (now >= next_progress) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::seconds>(now - start);
      err << "kvadmin: waiting for the controller to place '" << spec.name
          << "' (" << waited.count() << " s of "
          << std::chrono::duration_cast<std::chrono::seconds>(wait).count()
          << "; "
          << (!v.ok() ? "etcd: " + v.status().ToString()
              : last.controller.empty()
                  ? std::string("no controller elected")
                  : "controller: node " + last.controller + ", " +
                        std::to_string(last.live.size()) + " live nodes")
          << ")\n";
      next_progress += std::chrono::seconds(1);
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
  err << "kvadmin: timed out after " << secs.count() << " s: ";
  if (last.controller.empty()) {
    err << "no controller is running (no kvserver --cluster is up in "
           "cluster '"
        << keys.cluster() << "')";
  } else if (last.live.empty()) {
    err << "the controller (node " << last.controller
        << ") has no live node to place it on";
  } else {
    err << "the controller (node " << last.controller
        << ") has not placed it yet (its log says why)";
  }
  err << ". The request stays at " << key
      << " and is served when a controller can; kvadmin cluster status "
         "shows it as pending\n";
  return kExitFailed;
}

}  // namespace kv::kvadmin
