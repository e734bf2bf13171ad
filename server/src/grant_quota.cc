#include "grant_quota.h"

#include <algorithm>

namespace kv::server {

bool GrantQuota::TryTake() {
  uint32_t n = open_.load(std::memory_order_relaxed);
  do {
    if (n >= cap_) return false;
  } while (!open_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
  return true;
}

void GrantQuota::Release() { open_.fetch_sub(1, std::memory_order_relaxed); }

GrantQuota* GrantQuotas::For(store::Keyspace* ks) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = quotas_.find(ks);
  if (it != quotas_.end()) return it->second.get();
  const uint64_t segments = ks->Stats().segments;
  const uint64_t cap = std::max<uint64_t>(1, segments * share_percent_ / 100);
  auto q = std::make_unique<GrantQuota>(static_cast<uint32_t>(cap));
  GrantQuota* raw = q.get();
  quotas_.emplace(ks, std::move(q));
  return raw;
}

}  // namespace kv::server
