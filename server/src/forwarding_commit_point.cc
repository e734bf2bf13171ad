#include "forwarding_commit_point.h"

#include <mutex>
#include <vector>

namespace kv::server {

ForwardingCommitPoint::ForwardingCommitPoint(store::Persister* persister,
                                             const uint8_t* log,
                                             uint64_t log_size)
    : local_(persister), log_(log), log_size_(log_size) {}

Status ForwardingCommitPoint::MakeDurable(const store::Persister::Range* ranges,
                                          size_t n) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (frozen_) {
    return Status::WrongShard(
        "the shard is being handed to another node: re-read the map");
  }
  if (forwarder_ == nullptr && replicas_ == nullptr) {
    return local_.MakeDurable(ranges, n);
  }
  std::vector<ForwardedRecord> records;
  records.reserve(n);
  for (size_t i = 0; i < n; i++) {
    const auto* p = static_cast<const uint8_t*>(ranges[i].addr);
    // Records lie in the log; the index's buckets do not.
    if (p < log_ || p >= log_ + log_size_) continue;
    records.push_back({p, ranges[i].len});
  }
  auto local = [&] { return local_.MakeDurable(ranges, n); };
  if (replicas_ != nullptr) {
    KV_RETURN_IF_ERROR(
        replicas_->ForwardAround(records.data(), records.size(), local));
  } else {
    KV_RETURN_IF_ERROR(local());
  }
  if (forwarder_ == nullptr || records.empty()) return Status::Ok();
  return forwarder_->Forward(records.data(), records.size());
}

bool ForwardingCommitPoint::publish_before_durable() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return forwarder_ == nullptr && replicas_ == nullptr && !frozen_;
}

void ForwardingCommitPoint::SetReplicas(std::shared_ptr<Forwarder> replicas) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  replicas_ = std::move(replicas);
}

void ForwardingCommitPoint::Attach(std::shared_ptr<Forwarder> forwarder) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  forwarder_ = std::move(forwarder);
  frozen_ = false;
}

void ForwardingCommitPoint::Detach() {
  std::unique_lock<std::shared_mutex> lock(mu_);
  forwarder_.reset();
  frozen_ = false;
}

void ForwardingCommitPoint::Freeze() {
  std::unique_lock<std::shared_mutex> lock(mu_);
  frozen_ = true;
}

bool ForwardingCommitPoint::frozen() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return frozen_;
}

}  // namespace kv::server
