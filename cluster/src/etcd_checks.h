// The argument rules of etcd.h, written once for both implementations
// (EtcdHttp checks before sending, FakeEtcd before applying), so they
// refuse the same calls with the same code. Each returns ok or
// invalid_argument naming the argument. Thread-safe.
#ifndef KV_CLUSTER_ETCD_CHECKS_H_
#define KV_CLUSTER_ETCD_CHECKS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "kv/cluster/etcd_types.h"
#include "kv/status.h"

namespace kv::cluster {

// etcd's largest lease TTL (lease.MaxLeaseTTL).
inline constexpr int64_t kMaxLeaseTtlS = 9'000'000'000;

Status CheckKey(std::string_view key);
Status CheckLeaseId(int64_t id);                // > 0
Status CheckPutLease(int64_t lease);            // >= 0 (0: none)
Status CheckTtl(int64_t ttl_s);                 // 1..kMaxLeaseTtlS
Status CheckCompactRevision(int64_t revision);  // >= 1
Status CheckStartRevision(int64_t revision);    // >= 0
// Keys non-empty, compare revisions >= 0, no key twice among a branch's
// writes (etcd refuses that as "duplicate key given in txn request").
Status CheckTxn(const std::vector<Compare>& compares,
                const std::vector<TxnOp>& success,
                const std::vector<TxnOp>& failure);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_CHECKS_H_
