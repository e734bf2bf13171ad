// The bytes EtcdHttp exchanges with etcd's v3 JSON gateway (etcd 3.4,
// paths /v3/kv/range, /v3/kv/put, ...): request bodies built from our
// types, and responses decoded back into them. docs/cluster.md describes
// the format; in short, bytes fields are base64 strings, int64 fields are
// decimal strings, and fields holding zero/false/empty are omitted.
//
// Every response is untrusted: a decoder returns corruption (naming the
// field) for anything that is not what etcd 3.4 sends — not JSON, a field
// of the wrong type, a number that does not fit, bad base64, a missing
// header, revisions that contradict each other — and never crashes.
// Pure functions; thread-safe. tests/etcd_json_fuzzer.cc fuzzes them.
#ifndef KV_CLUSTER_ETCD_JSON_H_
#define KV_CLUSTER_ETCD_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kv/cluster/etcd_types.h"
#include "kv/status.h"

namespace kv::cluster::etcd_json {

// The range end that selects every key starting with `prefix`: the prefix
// with its last byte below 0xff incremented and what follows dropped;
// "\0" (to the end of the keyspace) when there is no such byte.
std::string PrefixEnd(std::string_view prefix);

// Request bodies. `range_end` empty: the single key.
std::string RangeRequest(std::string_view key, std::string_view range_end);
std::string PutRequest(std::string_view key, std::string_view value,
                       int64_t lease);
std::string DeleteRangeRequest(std::string_view key);
std::string TxnRequest(const std::vector<Compare>& compares,
                       const std::vector<TxnOp>& success,
                       const std::vector<TxnOp>& failure);
std::string LeaseGrantRequest(int64_t ttl_s);
std::string LeaseIdRequest(int64_t id);  // keepalive and revoke
std::string CompactRequest(int64_t revision);
std::string WatchCreateRequest(std::string_view key, std::string_view range_end,
                               int64_t start_revision);

// An error answer ({"error": ..., "code": <gRPC code>, ...}), mapped to
// the Status etcd.h documents (gRPC NotFound → not_found, Unavailable →
// unavailable, ...). `what` names the operation for the message. Returns
// corruption when `body` is not such an answer. Never returns ok.
Status DecodeError(std::string_view what, long http_status,
                   std::string_view body);

// Successful answers.
Result<Range> DecodeRange(std::string_view body);
Result<int64_t> DecodePut(std::string_view body);  // the revision
Result<DeleteResult> DecodeDeleteRange(std::string_view body);
Result<TxnResult> DecodeTxn(std::string_view body);
Result<Lease> DecodeLeaseGrant(std::string_view body);
// The keepalive stream's one answer ({"result": {...}}) for lease `id`:
// the TTL. not_found when etcd answers without a TTL (the lease does not
// exist); corruption when the answer is for another lease.
Result<int64_t> DecodeLeaseKeepAlive(std::string_view body, int64_t id);
// An answer with only a header (revoke, compaction).
Status DecodeHeaderOnly(std::string_view body);

// One line of the watch stream.
struct WatchMessage {
  int64_t header_revision = 0;  // 0 when absent (cancel messages)
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;  // canceled because start was compacted
  std::string cancel_reason;
  std::vector<WatchEvent> events;  // in non-decreasing revision order
};
// Errors: corruption as above; an error line ({"error": ...}) gives the
// Status DecodeError would.
Result<WatchMessage> DecodeWatchLine(std::string_view line);

}  // namespace kv::cluster::etcd_json

#endif  // KV_CLUSTER_ETCD_JSON_H_
