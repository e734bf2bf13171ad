#include "grants.h"

#include <librpma.h>
#include <rpma_ext.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "kv/record_format.h"
#include "log.h"

namespace kv::server {
namespace {

// A granted segment with less room than this (a returned one nearly full)
// is sealed and another taken: it cannot hold even the smallest record.
constexpr uint64_t kMinRoom = record_format::RecordSize(1, 0);

}  // namespace

GrantHolder::GrantHolder(rpma_peer* peer, store::Keyspace* keyspace,
                         Limits limits)
    : peer_(peer),
      keyspace_(keyspace),
      quota_(limits.quota),
      refills_(limits.refill_rate, limits.refill_burst) {}

GrantHolder::~GrantHolder() {
  if (held_) (void)Seal();
  ReleaseQuota();
}

void GrantHolder::ReleaseQuota() {
  if (counted_ && quota_ != nullptr) quota_->Release();
  counted_ = false;
}

Status GrantHolder::Acquire(bool allow_reserve) {
  std::chrono::milliseconds retry{0};
  // A REFILL that replaces a grant at least half filled by successful
  // commits is free: that is a writer writing, not a client collecting
  // segments (the rate would otherwise cap a large-value writer at a few
  // puts per second). Refused COMMITs count for nothing here, or a bogus
  // one per REFILL would make every REFILL free.
  const bool used_up =
      held_ && committed_ >= (uint64_t{grant_.size} - grant_.start) / 2;
  if (!used_up && !refills_.Take(TokenBucket::Clock::now(), &retry)) {
    return Status::Busy(
        "REFILL rate limit of this connection "
        "(--refill_rate): retry in " +
        std::to_string(retry.count()) + " ms");
  }
  if (!held_ && !counted_ && quota_ != nullptr) {
    if (!quota_->TryTake()) {
      return Status::Busy("keyspace '" + keyspace_->name() + "' has " +
                          std::to_string(quota_->cap()) +
                          " segments granted, its share "
                          "(--grant_share_percent): retry in 100 ms");
    }
    counted_ = true;
  }
  Status st = AcquireSegment(allow_reserve);
  if (!st.ok() && !held_) ReleaseQuota();
  return st;
}

Status GrantHolder::AcquireSegment(bool allow_reserve) {
  store::SegmentGrant fresh{};
  bool reserve = false;
  for (int attempt = 0;; attempt++) {
    Result<store::SegmentGrant> g = keyspace_->GrantSegment(false);
    if (!g.ok() && g.status().IsNoSpace() && allow_reserve) {
      g = keyspace_->GrantSegment(true);
      reserve = true;
    }
    if (!g.ok()) return g.status();
    fresh = *g;
    if (fresh.size - fresh.start >= kMinRoom) break;
    Status st = keyspace_->SealSegment(fresh);
    if (!st.ok() || attempt >= 8) {
      return st.ok() ? Status::NoSpace("no segment with room to grant") : st;
    }
  }
  rpma_mr_local* mr = nullptr;
  const size_t len = fresh.size - fresh.start;
  int rc = conn_ != nullptr
               ? rpma_conn_mr_reg(conn_, keyspace_->GrantBytes(fresh), len,
                                  RPMA_MR_USAGE_WRITE_DST, &mr)
               : RPMA_E_NOSUPP;
  const bool bound = rc == 0;
  if (rc == RPMA_E_NOSUPP) {
    // The keyspace's protection domain still keeps every other keyspace
    // out; within it, the rkey's randomness is what separates writers.
    static std::atomic<bool> said{false};
    if (conn_ != nullptr && !said.exchange(true)) {
      Log("grants are ordinary registrations of the keyspace's protection "
          "domain (the provider has no per-connection ones): a writer can "
          "rewrite its committed records (docs/protocol.md, threat model)");
    }
    rc = rpma_mr_reg(peer_, keyspace_->GrantBytes(fresh), len,
                     RPMA_MR_USAGE_WRITE_DST, &mr);
  }
  uint8_t desc[protocol::kDescriptorSize];
  if (rc == 0) {
    rc = rpma_mr_get_descriptor(mr, desc);
    if (rc) rpma_mr_dereg(&mr);
  }
  if (rc) {
    (void)keyspace_->ReturnSegment(fresh);
    return Status::Unavailable(std::string("registering a grant failed: ") +
                               rpma_err_2str(rc));
  }
  if (held_) {
    Status st = SealHeld();
    if (!st.ok())
      Logf("sealing segment %u: %s", grant_.segment, st.ToString().c_str());
  }
  grant_ = fresh;
  reserve_ = reserve;
  mr_ = mr;
  conn_bound_ = bound;
  floor_ok_ = true;
  floor_ = 0;
  committed_ = 0;
  std::memcpy(desc_, desc, sizeof(desc_));
  held_ = true;
  return Status::Ok();
}

void GrantHolder::Committed(uint32_t segment, uint64_t end) {
  if (!held_ || segment != grant_.segment || end <= grant_.start) return;
  committed_ = std::max(committed_, end - grant_.start);
}

void GrantHolder::Claimed(uint32_t segment, uint64_t end) {
  if (!held_ || mr_ == nullptr || !floor_ok_ || segment != grant_.segment ||
      end <= grant_.start) {
    return;
  }
  const uint64_t floor = end - grant_.start;
  if (floor <= floor_) return;
  int rc = rpma_mr_advance(mr_, floor);
  if (rc == 0) {
    floor_ = floor;
  } else {
    floor_ok_ = false;  // the provider has no floors: stop asking
    if (rc != RPMA_E_NOSUPP) {
      Logf("raising a grant's write floor: %s", rpma_err_2str(rc));
    }
  }
}

void GrantHolder::Deregister() {
  if (mr_ == nullptr) return;
  int rc = rpma_mr_dereg(&mr_);
  if (rc) Logf("deregistering a grant: %s", rpma_err_2str(rc));
  mr_ = nullptr;
}

Status GrantHolder::SealHeld() {
  if (!held_) return Status::Ok();
  Deregister();
  held_ = false;
  return keyspace_->SealSegment(grant_);
}

Status GrantHolder::Seal() {
  Status st = SealHeld();
  ReleaseQuota();
  return st;
}

Status GrantHolder::Return() {
  if (!held_) return Status::Ok();
  Deregister();
  held_ = false;
  ReleaseQuota();
  return keyspace_->ReturnSegment(grant_);
}

protocol::Grant GrantHolder::Describe() const {
  protocol::Grant g;
  if (!held_) return g;
  g.flags = reserve_ ? protocol::kGrantDeletesOnly : 0;
  g.segment = grant_.segment;
  g.grant_id = grant_.grant_id;
  g.start = grant_.start;
  g.size = grant_.size;
  std::memcpy(g.write_desc, desc_, sizeof(desc_));
  return g;
}

}  // namespace kv::server
