// kv::server::GrantQuota — how many of one keyspace's segments may be
// granted (open) at once: a share of its segments (--grant_share_percent),
// so that one client or a few cannot hold them all; the rest stays free
// for the refills of writers that hold a grant (a refill replaces a grant,
// it does not add one) and for the cleaner.
//
// GrantQuotas maps each open keyspace to its quota (created on first use,
// kept until the server ends, like KeyspaceTable's entries).
// Thread-safety: thread-safe (atomics; GrantQuotas locks its map).
#ifndef KV_SERVER_GRANT_QUOTA_H_
#define KV_SERVER_GRANT_QUOTA_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "kv/store/keyspace.h"

namespace kv::server {

class GrantQuota {
 public:
  explicit GrantQuota(uint32_t cap) : cap_(cap) {}
  // Counts one more open grant: true, or false (nothing counted) when
  // `cap` are open already.
  bool TryTake();
  // The grant taken by TryTake was sealed or returned.
  void Release();
  uint32_t cap() const { return cap_; }
  uint32_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  const uint32_t cap_;
  std::atomic<uint32_t> open_{0};
};

class GrantQuotas {
 public:
  explicit GrantQuotas(uint32_t share_percent)
      : share_percent_(share_percent) {}
  // The quota of `ks`: cap = max(1, segments * share / 100).
  GrantQuota* For(store::Keyspace* ks);

 private:
  const uint32_t share_percent_;
  std::mutex mu_;
  std::map<const store::Keyspace*, std::unique_ptr<GrantQuota>> quotas_;
};

}  // namespace kv::server

#endif  // KV_SERVER_GRANT_QUOTA_H_
