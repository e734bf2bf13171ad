#include "fake_etcd_watch.h"

#include <algorithm>

namespace kv::cluster {

FakeEtcdWatch::FakeEtcdWatch(std::shared_ptr<FakeEtcdState> state,
                             std::string prefix, int64_t start_revision)
    : s_(std::move(state)),
      prefix_(std::move(prefix)),
      next_revision_(start_revision) {}

void FakeEtcdWatch::Cancel() {
  std::lock_guard<std::mutex> l(s_->mu);
  cancelled_ = true;
  s_->changed.notify_all();
}

std::vector<WatchEvent> FakeEtcdWatch::Poll() {
  std::vector<WatchEvent> out;
  if (cancelled_) {
    final_ = Status::Unavailable("the watch was cancelled");
    return out;
  }
  if (s_->down || s_->watches_held) return out;
  if (epoch_ != s_->stream_epoch) {
    epoch_ = s_->stream_epoch;
    established_ = false;
  }
  if (!established_) {
    if (next_revision_ == 0) next_revision_ = s_->revision + 1;
    if (next_revision_ < s_->compacted) {
      compact_revision_ = s_->compacted;
      final_ = Status::NotFound(
          "watch from revision " + std::to_string(next_revision_) +
          ": etcd (fake) compacted its history up to revision " +
          std::to_string(s_->compacted) +
          "; re-read and watch from the read's revision + 1");
      return out;
    }
    established_ = true;
  }
  auto first = std::lower_bound(
      s_->history.begin(), s_->history.end(), next_revision_.load(),
      [](const WatchEvent& e, int64_t r) { return e.mod_revision < r; });
  for (auto it = first; it != s_->history.end(); ++it) {
    if (it->key.starts_with(prefix_)) out.push_back(*it);
  }
  if (!out.empty()) next_revision_ = out.back().mod_revision + 1;
  return out;
}

Result<std::vector<WatchEvent>> FakeEtcdWatch::Next(
    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> l(s_->mu);
  while (true) {
    if (!final_.ok()) return final_;
    std::vector<WatchEvent> out = Poll();
    if (!final_.ok()) return final_;
    if (!out.empty()) return out;
    if (s_->changed.wait_until(l, deadline) == std::cv_status::timeout) {
      out = Poll();
      if (!final_.ok()) return final_;
      if (!out.empty() || !s_->down) return out;
      return Status::Unavailable(
          "etcd (fake) is unavailable: SetUnavailable(true) was called");
    }
  }
}

}  // namespace kv::cluster
