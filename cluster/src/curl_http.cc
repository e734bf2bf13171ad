#include "curl_http.h"

#include <cerrno>
#include <cstring>
#include <mutex>

namespace kv::cluster {
namespace {

// The hint every "cannot reach etcd" message ends with.
constexpr char kStartEtcdHint[] =
    "is etcd running? (Debian etcd-server; bash tools/setup.sh installs "
    "it)";

size_t Append(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<HttpSink*>(user);
  size_t bytes = size * n;
  if (sink->body.size() + bytes > sink->limit) {
    sink->overflowed = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  sink->body.append(data, bytes);
  return bytes;
}

std::string Ms(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

}  // namespace

void CurlGlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlEasy NewPost(const Endpoint& ep, std::string_view path,
                 const std::string& body, const HttpLimits& limits,
                 HttpSink* sink, CurlSlist* headers) {
  CurlGlobalInitOnce();
  CurlEasy h(curl_easy_init());
  if (!h) return h;
  headers->reset(curl_slist_append(nullptr, "Content-Type: application/json"));
  std::string url = "http://" + ep.ToString() + std::string(path);
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());  // curl copies it
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers->get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(limits.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(limits.request_timeout.count()));
  // A peer that vanished without closing (host down, cable) shows up as a
  // dead stream after ~11 s (2 s idle, then the kernel's 9 probes 1 s
  // apart) instead of never: what bounds an idle watch.
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
  sink->limit = limits.max_answer_bytes;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
  return h;
}

bool NeverSent(CURL* handle) {
  curl_off_t connect_us = 0;
  if (curl_easy_getinfo(handle, CURLINFO_CONNECT_TIME_T, &connect_us) !=
      CURLE_OK) {
    return false;
  }
  return connect_us == 0;
}

Status TransferFailure(const Endpoint& ep, std::string_view what, CURLcode code,
                       CURL* handle, const HttpSink& sink,
                       const HttpLimits& limits) {
  std::string at = "etcd at " + ep.ToString();
  std::string op(what);
  switch (code) {
    case CURLE_COULDNT_CONNECT: {
      long os_errno = 0;
      curl_easy_getinfo(handle, CURLINFO_OS_ERRNO, &os_errno);
      if (os_errno == ECONNREFUSED || os_errno == 0) {
        return Status::Unavailable(at + " refused the connection (" + op +
                                   "): " + kStartEtcdHint);
      }
      return Status::Unavailable(at + " cannot be reached (" + op + ": " +
                                 std::strerror(static_cast<int>(os_errno)) +
                                 "): is the host up?");
    }
    case CURLE_COULDNT_RESOLVE_HOST:
      return Status::Unavailable("cannot resolve the host of " + at +
                                 ": check the etcd:// endpoint list");
    case CURLE_OPERATION_TIMEDOUT:
      if (NeverSent(handle)) {
        return Status::TimedOut(at + " did not accept a connection within " +
                                Ms(limits.connect_timeout) +
                                ": is the host up and the port right?");
      }
      return Status::TimedOut(at + " did not answer " + op + " within " +
                              Ms(limits.request_timeout) +
                              " (a write may still have been applied)");
    case CURLE_WRITE_ERROR:
      if (sink.overflowed) {
        return Status::Corruption(
            at + " sent an answer to " + op + " larger than " +
            std::to_string(limits.max_answer_bytes) + " bytes");
      }
      break;
    default:
      break;
  }
  return Status::Unavailable("connection to " + at + " failed during " + op +
                             ": " + curl_easy_strerror(code));
}

Result<HttpAnswer> HttpPost(const Endpoint& ep, std::string_view path,
                            std::string_view what, const std::string& body,
                            const HttpLimits& limits, bool* never_sent) {
  HttpSink sink;
  CurlSlist headers;
  CurlEasy h = NewPost(ep, path, body, limits, &sink, &headers);
  *never_sent = true;
  if (!h) return Status::Unavailable("libcurl could not make a handle");
  CURLcode rc = curl_easy_perform(h.get());
  if (rc != CURLE_OK) {
    *never_sent = NeverSent(h.get());
    return TransferFailure(ep, what, rc, h.get(), sink, limits);
  }
  *never_sent = false;
  HttpAnswer answer;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  answer.body = std::move(sink.body);
  return answer;
}

}  // namespace kv::cluster
