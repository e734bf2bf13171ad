// kvadmin's cluster commands (docs/cluster.md, "kvadmin cluster"): they
// talk to etcd only, never to a kvserver.
//
//   kvadmin --cluster=etcd://H:P[,...] [--cluster_name=rpkv] cluster status
//           [--format=text|json]
//   kvadmin --cluster=... cluster create-keyspace NAME [--shards=4]
//           [--replicas=1] [--wait_s=30]
// (moves and drains: cluster_move_commands.h)
//
// Each returns a process exit code (commands.h): 0 ok, 1 the operation
// failed (etcd unreachable, the map does not decode, the keyspace exists
// already, the wait timed out; the message is on err), 2 usage error.
//
// Thread-safety: one command at a time; `etcd` must outlive the call.
#ifndef KV_TOOLS_KVADMIN_CLUSTER_COMMANDS_H_
#define KV_TOOLS_KVADMIN_CLUSTER_COMMANDS_H_

#include <chrono>
#include <iosfwd>
#include <memory>
#include <string>

#include "kv/cluster/etcd.h"
#include "kv/cluster/etcd_keys.h"
#include "kv/cluster/keyspace_spec.h"
#include "kv/status.h"

namespace kv::kvadmin {

// The etcd client and key layout of --cluster / --cluster_name.
// invalid_argument for a bad endpoint list or cluster name (a usage
// error); nothing is sent to etcd yet.
struct ClusterTarget {
  std::string url;  // "etcd://..." as given, for messages
  std::unique_ptr<cluster::Etcd> etcd;
  cluster::EtcdKeys keys;
};
Result<ClusterTarget> OpenClusterTarget(const std::string& url,
                                        const std::string& cluster_name);

// Reads everything under the cluster's prefix at one revision and prints
// it: as text (cluster_view.h), or with `json` as one JSON object
// (cluster_status_json.h). Exit 1 when etcd cannot be read or the map
// does not decode (after printing what could be read).
int ClusterStatus(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                  std::ostream& out, std::ostream& err, bool json = false);

// Writes the desired key keyspaces/<spec.name> in a transaction that
// requires its absence, then waits up to `wait` for the controller to
// place the keyspace in the map, with a progress line per second on err,
// and prints its shards and owners. `wait` 0: returns after the write.
// Exit 2 for a spec KeyspaceSpec::Validate refuses; exit 1 when the
// keyspace is desired or in the map already ("already exists"), when
// etcd fails, or when the wait times out (saying whether a controller is
// running at all).
int ClusterCreateKeyspace(cluster::Etcd& etcd, const cluster::EtcdKeys& keys,
                          const cluster::KeyspaceSpec& spec,
                          std::chrono::milliseconds wait, std::ostream& out,
                          std::ostream& err);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_CLUSTER_COMMANDS_H_
