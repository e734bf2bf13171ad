// kv::cluster::EtcdHttp: the Etcd interface (etcd.h) over etcd's v3 JSON
// gateway (etcd 3.4+, plain HTTP) with libcurl. docs/cluster.md says why
// not gRPC, and what the gateway cannot do.
//
// Endpoints are tried in order, starting with the last one that answered:
// a request moves on to the next endpoint when it could not connect; a
// read, a keepalive or a watch also when the connection broke later; a
// write (put, delete, txn, grant, revoke, compact) does not, as it may
// have been applied — the caller sees the error and re-reads. When every
// endpoint failed, the error is the last one's.
//
// Each call makes its own HTTP connection (no shared handle, no lock on
// the request path). Thread-safety: as etcd.h. Watches must not outlive
// the EtcdHttp that opened them.
#ifndef KV_CLUSTER_ETCD_HTTP_H_
#define KV_CLUSTER_ETCD_HTTP_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "kv/cluster/etcd.h"
#include "kv/endpoint.h"

namespace kv::cluster {

class EtcdHttp : public Etcd {
 public:
  struct Options {
    std::vector<Endpoint> endpoints;  // at least one
    std::chrono::milliseconds connect_timeout{1000};
    std::chrono::milliseconds request_timeout{5000};
    // Larger answers are refused as corruption (a range over a huge
    // prefix, or a hostile peer).
    size_t max_answer_bytes = 64 << 20;
  };

  // Does not contact etcd (the first request does).
  // Errors: invalid_argument for no endpoint or a timeout that is not
  // positive.
  static Result<std::unique_ptr<EtcdHttp>> Open(Options options);
  // Same, from "etcd://host:port,..." (etcd_endpoints.h) and defaults.
  static Result<std::unique_ptr<EtcdHttp>> Open(std::string_view endpoints);

  Result<Range> Get(std::string_view key) override;
  Result<Range> GetPrefix(std::string_view prefix) override;
  Result<int64_t> Put(std::string_view key, std::string_view value,
                      int64_t lease = 0) override;
  Result<DeleteResult> Delete(std::string_view key) override;
  Result<TxnResult> Txn(const std::vector<Compare>& compares,
                        const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override;
  Result<Lease> LeaseGrant(int64_t ttl_s) override;
  Result<int64_t> LeaseKeepAlive(int64_t id) override;
  Status LeaseRevoke(int64_t id) override;
  Status Compact(int64_t revision) override;
  Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix,
                                           int64_t start_revision) override;

 private:
  explicit EtcdHttp(Options options) : options_(std::move(options)) {}

  // POSTs `body` to `path`, failing over as the header says (`retry_sent`:
  // also after the request may have reached etcd). Returns the body of an
  // HTTP 200 answer and sets `*from` to the endpoint that sent it; an
  // error answer as etcd_json::DecodeError maps it.
  Result<std::string> Call(std::string_view path, std::string_view what,
                           const std::string& body, bool retry_sent,
                           const Endpoint** from);

  const Options options_;
  std::atomic<size_t> preferred_{
      0};  // index of the last endpoint that answered
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_HTTP_H_
