// libcurl, as EtcdHttp and its watches use it: handles owned by
// unique_ptrs, one POST of a JSON body to one endpoint, and the one place
// where a transport failure becomes a Status a user can act on.
// Thread-safety: the functions are; a handle belongs to one thread at a
// time.
#ifndef KV_CLUSTER_CURL_HTTP_H_
#define KV_CLUSTER_CURL_HTTP_H_

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "kv/endpoint.h"
#include "kv/status.h"

namespace kv::cluster {

struct CurlEasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct CurlMultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;
using CurlMulti = std::unique_ptr<CURLM, CurlMultiDeleter>;
using CurlSlist = std::unique_ptr<curl_slist, CurlSlistDeleter>;

struct HttpLimits {
  std::chrono::milliseconds connect_timeout{1000};
  std::chrono::milliseconds request_timeout{5000};  // 0: none (streams)
  size_t max_answer_bytes = 64 << 20;
};

// A body being received; the write callback appends up to `limit` bytes
// and makes curl fail (CURLE_WRITE_ERROR) beyond.
struct HttpSink {
  std::string body;
  size_t limit = 0;
  bool overflowed = false;
};

// curl_global_init, once per process (later calls do nothing).
void CurlGlobalInitOnce();

// An easy handle set up to POST `body` to http://<ep><path> with a JSON
// content type, the limits' timeouts, no signals, TCP keepalive, and the
// answer going into `sink`. `body`, `headers` and `sink` must outlive the
// transfer; `headers` receives the header list the handle points to.
// Returns nullptr when libcurl cannot allocate a handle.
CurlEasy NewPost(const Endpoint& ep, std::string_view path,
                 const std::string& body, const HttpLimits& limits,
                 HttpSink* sink, CurlSlist* headers);

// A failed transfer as a Status: refused or unresolvable → unavailable
// ("is etcd running?"), a timeout → timed_out, too large an answer →
// corruption, a broken connection → unavailable.
Status TransferFailure(const Endpoint& ep, std::string_view what, CURLcode code,
                       CURL* handle, const HttpSink& sink,
                       const HttpLimits& limits);

// True when the failed transfer on `handle` cannot have delivered its
// request to etcd (no connection was made), so retrying a write elsewhere
// cannot apply it twice.
bool NeverSent(CURL* handle);

struct HttpAnswer {
  long status = 0;
  std::string body;
};

// One blocking POST. Errors: those of TransferFailure, with `*never_sent`
// set as NeverSent says; unavailable when no handle could be made.
Result<HttpAnswer> HttpPost(const Endpoint& ep, std::string_view path,
                            std::string_view what, const std::string& body,
                            const HttpLimits& limits, bool* never_sent);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_CURL_HTTP_H_
