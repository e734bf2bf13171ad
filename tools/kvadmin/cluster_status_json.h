// `kvadmin cluster status --format=json`: the ClusterView (cluster_view.h)
// as one JSON object, for scripts. The members (docs/cluster.md,
// "kvadmin cluster"):
//
//   {"cluster": "rpkv", "revision": 42, "controller": "1" | null,
//    "nodes": [{"id", "address" | null, "alive", "draining", "primaries",
//               "replicas"}],
//    "keyspaces": [{"name", "id", "shards": [{"id", "slots": [[f, l]],
//                   "epoch", "replicas", "available"}]}] | null,
//    "map_error": "..." (only when the map does not decode),
//    "pending": [{"name", "shards", "replicas"}],
//    "moves": [{"keyspace", "shard", "source", "target", "epoch", "phase",
//               "paused", "rate_bytes_per_s", "last_sequence", "reason",
//               "progress": {"phase", "keys_copied", "keys_total",
//                            "bytes_copied", "keys_forwarded",
//                            "updated_unix_ms", "age_ms"} | null}],
//    "draining": [{"node", "primaries_left", "alive"}],
//    "problems": ["..."]}
//
// Thread-safety: a pure function.
#ifndef KV_TOOLS_KVADMIN_CLUSTER_STATUS_JSON_H_
#define KV_TOOLS_KVADMIN_CLUSTER_STATUS_JSON_H_

#include <string>

#include "cluster_view.h"
#include "kv/cluster/etcd_keys.h"

namespace kv::kvadmin {

std::string ClusterStatusJson(const ClusterView& view,
                              const cluster::EtcdKeys& keys);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_CLUSTER_STATUS_JSON_H_
