#include "etcd_http_watch.h"

#include <algorithm>

#include "etcd_json.h"

namespace kv::cluster {
namespace {

constexpr std::chrono::milliseconds kMaxBackoff{1000};

}  // namespace

EtcdHttpWatch::EtcdHttpWatch(Params params)
    : p_(std::move(params)),
      multi_(curl_multi_init()),
      endpoint_(p_.first_endpoint % p_.endpoints.size()),
      next_revision_(p_.start_revision) {}

EtcdHttpWatch::~EtcdHttpWatch() { Drop(false); }

void EtcdHttpWatch::Cancel() {
  cancelled_.store(true);
  if (multi_) curl_multi_wakeup(multi_.get());
}

void EtcdHttpWatch::Connect() {
  // Resume point: exactly the first revision not delivered, so nothing is
  // lost or repeated (Apply refuses anything older).
  request_ =
      etcd_json::WatchCreateRequest(p_.key, p_.range_end, next_revision_);
  sink_ = HttpSink{};
  easy_ = NewPost(p_.endpoints[endpoint_], "/v3/watch", request_, p_.limits,
                  &sink_, &headers_);
  if (easy_ && curl_multi_add_handle(multi_.get(), easy_.get()) != CURLM_OK) {
    easy_.reset();
  }
}

void EtcdHttpWatch::Drop(bool failed) {
  if (easy_) {
    curl_multi_remove_handle(multi_.get(), easy_.get());
    easy_.reset();
  }
  headers_.reset();
  established_ = false;
  if (failed) {
    endpoint_ = (endpoint_ + 1) % p_.endpoints.size();
    retry_at_ = Clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  }
}

Status EtcdHttpWatch::Finished(CURLcode code) {
  const Endpoint& ep = p_.endpoints[endpoint_];
  if (code != CURLE_OK) {
    return TransferFailure(ep, "watch", code, easy_.get(), sink_, p_.limits);
  }
  long http = 0;
  curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &http);
  if (http != 200) return etcd_json::DecodeError("watch", http, sink_.body);
  return Status::Unavailable("etcd at " + ep.ToString() +
                             " ended the watch stream (stopping?)");
}

Status EtcdHttpWatch::Apply(const std::string& line,
                            std::vector<WatchEvent>* out) {
  Result<etcd_json::WatchMessage> m = etcd_json::DecodeWatchLine(line);
  if (!m.ok()) return m.status();
  if (m->canceled) {
    if (m->compact_revision > 0) {
      compact_revision_ = m->compact_revision;
      return Status::NotFound(
          "watch from revision " + std::to_string(next_revision_) +
          ": etcd compacted its history up to revision " +
          std::to_string(m->compact_revision) +
          "; re-read and watch from the read's revision + 1");
    }
    return Status::Unavailable("etcd cancelled the watch: " + m->cancel_reason);
  }
  if (m->created) {
    established_ = true;
    backoff_ = std::chrono::milliseconds(50);
    if (next_revision_ == 0) next_revision_ = m->header_revision + 1;
  }
  if (m->events.empty()) {
    // A progress notification: every event up to the header's revision
    // has been sent, as clientv3 reads it too.
    if (!m->created && established_ && m->header_revision > 0) {
      next_revision_ = std::max(next_revision_, m->header_revision + 1);
    }
    return Status::Ok();
  }
  if (!established_ || next_revision_ == 0) {
    return Status::Corruption("etcd sent watch events before the watch");
  }
  // Events arrive whole revisions at a time and in order (the decoder
  // checks the order inside one message). Anything before the resume
  // point would be a repeat.
  if (m->events.front().mod_revision < next_revision_) {
    return Status::Corruption("etcd sent a watch event at revision " +
                              std::to_string(m->events.front().mod_revision) +
                              ", before the watch's next revision " +
                              std::to_string(next_revision_));
  }
  for (const WatchEvent& e : m->events) {
    if (!e.key.starts_with(p_.prefix)) {
      return Status::Corruption("etcd sent a watch event outside the prefix");
    }
  }
  next_revision_ = m->events.back().mod_revision + 1;
  for (WatchEvent& e : m->events) out->push_back(std::move(e));
  return Status::Ok();
}

Status EtcdHttpWatch::Drain(std::vector<WatchEvent>* out) {
  size_t start = 0;
  Status s;
  while (s.ok()) {
    size_t nl = sink_.body.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = sink_.body.substr(start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    s = Apply(line, out);
  }
  sink_.body.erase(0, start);
  return s;
}

Result<std::vector<WatchEvent>> EtcdHttpWatch::Next(
    std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  if (!multi_) return Status::Unavailable("libcurl could not make a handle");
  std::vector<WatchEvent> out;
  Status last;  // why the stream failed during this call, if it did
  while (final_.ok()) {
    if (cancelled_.load()) {
      final_ = Status::Unavailable("the watch was cancelled");
      break;
    }
    const Clock::time_point now = Clock::now();
    if (!easy_ && now >= retry_at_) Connect();
    int running = 0;
    curl_multi_perform(multi_.get(), &running);
    Status s = Drain(&out);
    if (s.IsNotFound()) {
      final_ = s;
      Drop(false);
      break;
    }
    if (!s.ok()) {
      last = s;
      Drop(true);
    }
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_.get(), &queued)) {
      if (msg->msg == CURLMSG_DONE && easy_ &&
          msg->easy_handle == easy_.get()) {
        last = Finished(msg->data.result);
        Drop(true);
      }
    }
    if (!out.empty()) return out;
    if (now >= deadline) {
      if (established_ || last.ok()) return out;
      if (p_.endpoints.size() > 1) {
        return Status(last.code(),
                      "no etcd endpoint kept the watch open; "
                      "the last: " +
                          last.message());
      }
      return last;
    }
    auto wait = deadline - now;
    if (!easy_ && retry_at_ > now) wait = std::min(wait, retry_at_ - now);
    wait = std::min<Clock::duration>(wait, kMaxBackoff);
    int ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
    curl_multi_poll(multi_.get(), nullptr, 0, std::max(ms, 1), nullptr);
  }
  if (!out.empty()) return out;  // the compaction error comes next call
  return final_;
}

}  // namespace kv::cluster
