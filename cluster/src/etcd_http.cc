#include "kv/cluster/etcd_http.h"

#include "curl_http.h"
#include "etcd_checks.h"
#include "etcd_http_watch.h"
#include "etcd_json.h"
#include "kv/cluster/etcd_endpoints.h"

namespace kv::cluster {
namespace {

namespace ej = etcd_json;

// Adds which endpoint said it to a decoder's Status.
Status At(const Endpoint& ep, Status s) {
  if (s.ok()) return s;
  return Status(s.code(), "etcd at " + ep.ToString() + ": " + s.message());
}

template <typename T>
Result<T> At(const Endpoint& ep, Result<T> r) {
  if (r.ok()) return r;
  return At(ep, r.status());
}

}  // namespace

Result<std::unique_ptr<EtcdHttp>> EtcdHttp::Open(Options options) {
  if (options.endpoints.empty()) {
    return Status::InvalidArgument("EtcdHttp needs at least one endpoint");
  }
  if (options.connect_timeout.count() <= 0 ||
      options.request_timeout.count() <= 0 || options.max_answer_bytes == 0) {
    return Status::InvalidArgument(
        "EtcdHttp timeouts and answer size must be positive");
  }
  CurlGlobalInitOnce();
  return std::unique_ptr<EtcdHttp>(new EtcdHttp(std::move(options)));
}

Result<std::unique_ptr<EtcdHttp>> EtcdHttp::Open(std::string_view endpoints) {
  Result<std::vector<Endpoint>> list = ParseEtcdEndpoints(endpoints);
  if (!list.ok()) return list.status();
  Options options;
  options.endpoints = std::move(list.value());
  return Open(std::move(options));
}

Result<std::string> EtcdHttp::Call(std::string_view path, std::string_view what,
                                   const std::string& body, bool retry_sent,
                                   const Endpoint** from) {
  const size_t n = options_.endpoints.size();
  const size_t start = preferred_.load(std::memory_order_relaxed) % n;
  HttpLimits limits{options_.connect_timeout, options_.request_timeout,
                    options_.max_answer_bytes};
  Status last;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (start + i) % n;
    const Endpoint& ep = options_.endpoints[index];
    bool never_sent = true;
    Result<HttpAnswer> answer =
        HttpPost(ep, path, what, body, limits, &never_sent);
    if (!answer.ok()) {
      last = answer.status();
      if (!never_sent && !retry_sent) return last;
      continue;
    }
    preferred_.store(index, std::memory_order_relaxed);
    *from = &ep;
    if (answer->status != 200) {
      return At(ep, ej::DecodeError(what, answer->status, answer->body));
    }
    return std::move(answer->body);
  }
  if (n > 1) {
    return Status(last.code(), "no etcd endpoint of " +
                                   FormatEtcdEndpoints(options_.endpoints) +
                                   " answered; the last: " + last.message());
  }
  return last;
}

Result<Range> EtcdHttp::Get(std::string_view key) {
  KV_RETURN_IF_ERROR(CheckKey(key));
  const Endpoint* from = nullptr;
  Result<std::string> body =
      Call("/v3/kv/range", "get", ej::RangeRequest(key, {}), true, &from);
  if (!body.ok()) return body.status();
  Result<Range> r = ej::DecodeRange(*body);
  if (r.ok() &&
      (r->kvs.size() > 1 || (r->kvs.size() == 1 && r->kvs[0].key != key))) {
    r = Status::Corruption("answered a get with another key");
  }
  return At(*from, std::move(r));
}

Result<Range> EtcdHttp::GetPrefix(std::string_view prefix) {
  std::string key = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  const Endpoint* from = nullptr;
  Result<std::string> body =
      Call("/v3/kv/range", "get prefix",
           ej::RangeRequest(key, ej::PrefixEnd(prefix)), true, &from);
  if (!body.ok()) return body.status();
  Result<Range> r = ej::DecodeRange(*body);
  for (size_t i = 0; r.ok() && i < r->kvs.size(); ++i) {
    if (!r->kvs[i].key.starts_with(prefix)) {
      r = Status::Corruption("answered a prefix read with a key outside it");
    }
  }
  return At(*from, std::move(r));
}

Result<int64_t> EtcdHttp::Put(std::string_view key, std::string_view value,
                              int64_t lease) {
  KV_RETURN_IF_ERROR(CheckKey(key));
  KV_RETURN_IF_ERROR(CheckPutLease(lease));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call(
      "/v3/kv/put", "put", ej::PutRequest(key, value, lease), false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodePut(*body));
}

Result<DeleteResult> EtcdHttp::Delete(std::string_view key) {
  KV_RETURN_IF_ERROR(CheckKey(key));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call("/v3/kv/deleterange", "delete",
                                  ej::DeleteRangeRequest(key), false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeDeleteRange(*body));
}

Result<TxnResult> EtcdHttp::Txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure) {
  KV_RETURN_IF_ERROR(CheckTxn(compares, success, failure));
  const Endpoint* from = nullptr;
  Result<std::string> body =
      Call("/v3/kv/txn", "txn", ej::TxnRequest(compares, success, failure),
           false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeTxn(*body));
}

Result<Lease> EtcdHttp::LeaseGrant(int64_t ttl_s) {
  KV_RETURN_IF_ERROR(CheckTtl(ttl_s));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call("/v3/lease/grant", "lease grant",
                                  ej::LeaseGrantRequest(ttl_s), false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeLeaseGrant(*body));
}

Result<int64_t> EtcdHttp::LeaseKeepAlive(int64_t id) {
  KV_RETURN_IF_ERROR(CheckLeaseId(id));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call("/v3/lease/keepalive", "lease keepalive",
                                  ej::LeaseIdRequest(id), true, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeLeaseKeepAlive(*body, id));
}

Status EtcdHttp::LeaseRevoke(int64_t id) {
  KV_RETURN_IF_ERROR(CheckLeaseId(id));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call("/v3/lease/revoke", "lease revoke",
                                  ej::LeaseIdRequest(id), false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeHeaderOnly(*body));
}

Status EtcdHttp::Compact(int64_t revision) {
  KV_RETURN_IF_ERROR(CheckCompactRevision(revision));
  const Endpoint* from = nullptr;
  Result<std::string> body = Call("/v3/kv/compaction", "compaction",
                                  ej::CompactRequest(revision), false, &from);
  if (!body.ok()) return body.status();
  return At(*from, ej::DecodeHeaderOnly(*body));
}

Result<std::unique_ptr<EtcdWatch>> EtcdHttp::Watch(std::string_view prefix,
                                                   int64_t start_revision) {
  KV_RETURN_IF_ERROR(CheckStartRevision(start_revision));
  EtcdHttpWatch::Params p;
  p.endpoints = options_.endpoints;
  p.first_endpoint = preferred_.load(std::memory_order_relaxed);
  p.limits = {options_.connect_timeout, std::chrono::milliseconds(0),
              options_.max_answer_bytes};
  p.key = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  p.range_end = ej::PrefixEnd(prefix);
  p.prefix = std::string(prefix);
  p.start_revision = start_revision;
  return std::unique_ptr<EtcdWatch>(new EtcdHttpWatch(std::move(p)));
}

}  // namespace kv::cluster
