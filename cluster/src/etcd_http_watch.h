// EtcdHttpWatch: an EtcdWatch (etcd_watch.h) over the gateway's streaming
// POST /v3/watch, which answers one JSON object per line for as long as
// the connection lives. Next() drives a curl multi handle itself (no
// thread): it connects when there is no stream, pumps the stream until
// events or the deadline, and on any failure drops the stream and
// reconnects — to the next endpoint, after a backoff (50 ms doubling to
// 1 s, reset once etcd confirms a stream) — asking for next_revision().
//
// Teardown: the destructor removes the transfer from the multi handle
// before either is freed (curl requires that order).
#ifndef KV_CLUSTER_ETCD_HTTP_WATCH_H_
#define KV_CLUSTER_ETCD_HTTP_WATCH_H_

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "curl_http.h"
#include "kv/cluster/etcd_watch.h"

namespace kv::cluster {

class EtcdHttpWatch : public EtcdWatch {
 public:
  struct Params {
    std::vector<Endpoint> endpoints;
    size_t first_endpoint = 0;
    HttpLimits limits;      // request_timeout 0: a stream has no deadline
    std::string key;        // the range etcd is asked for
    std::string range_end;  //
    std::string prefix;     // what every event's key must start with
    int64_t start_revision = 0;
  };

  explicit EtcdHttpWatch(Params params);
  ~EtcdHttpWatch() override;

  Result<std::vector<WatchEvent>> Next(
      std::chrono::milliseconds timeout) override;
  int64_t next_revision() const override { return next_revision_; }
  int64_t compact_revision() const override { return compact_revision_; }
  void Cancel() override;

 private:
  using Clock = std::chrono::steady_clock;

  void Connect();
  // Ends the stream; after a failure also moves to the next endpoint and
  // sets when the next connection may start.
  void Drop(bool failed);
  // Decodes the complete lines received so far, appending their events.
  // Errors: not_found (compaction; final), or why the stream must go.
  Status Drain(std::vector<WatchEvent>* out);
  Status Apply(const std::string& line, std::vector<WatchEvent>* out);
  // Why the finished transfer ended.
  Status Finished(CURLcode code);

  const Params p_;
  CurlMulti multi_;
  CurlEasy easy_;  // the stream; null when there is none
  CurlSlist headers_;
  std::string request_;
  HttpSink sink_;  // received bytes not yet split into lines
  size_t endpoint_;
  bool established_ = false;  // etcd confirmed the current stream
  int64_t next_revision_;
  int64_t compact_revision_ = 0;
  Status final_;  // not ok once compacted or cancelled
  Clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{50};
  std::atomic<bool> cancelled_{false};
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_HTTP_WATCH_H_
