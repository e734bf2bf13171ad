// kv::server::GrantHolder — one connection's open segment and the write
// registration over exactly its writable bytes.
//
// The registration (RPMA_MR_USAGE_WRITE_DST) covers
// [GrantBytes(grant), + size - start): remote offset 0 is segment byte
// `start`. It is always deregistered *before* the segment is sealed or
// returned, so that no remote write can land in a segment the keyspace
// has taken back.
// Bounds (server/README.md, "Limits"): a connection holds at most one
// grant; Acquire is rate-limited per connection (a token bucket) and a
// connection without a grant gets one only while its keyspace's
// GrantQuota has room.
// Thread-safety: none; owned by one session thread.
#ifndef KV_SERVER_GRANTS_H_
#define KV_SERVER_GRANTS_H_

#include <chrono>
#include <cstdint>

#include "grant_quota.h"
#include "kv/protocol.h"
#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "kv/store/segment.h"
#include "token_bucket.h"

struct rpma_peer;
struct rpma_conn;
struct rpma_mr_local;

namespace kv::server {

class GrantHolder : public store::ClaimFence {
 public:
  struct Limits {
    GrantQuota* quota = nullptr;  // nullptr: no keyspace share
    uint32_t refill_rate = 20;    // Acquires per second
    uint32_t refill_burst = 8;
  };
  GrantHolder(rpma_peer* peer, store::Keyspace* keyspace, Limits limits);
  // Seals a grant still held (a session that ends without BYE).
  ~GrantHolder() override;
  // The connection grants are for (before the first Acquire): its write
  // registrations are then reachable through this connection only
  // (rpma_conn_mr_reg; where the provider cannot, e.g. verbs without
  // memory windows, an ordinary registration of the keyspace's peer).
  void SetConnection(rpma_conn* conn) { conn_ = conn; }
  // store::ClaimFence: a commit claimed the grant's bytes up to `end`
  // (segment offset). The write registration's floor moves there
  // (rpma_mr_advance), so the client can no longer change a record the
  // store is about to verify and seal, or has sealed. A no-op where the
  // provider has no floors (verbs; written in docs/protocol.md).
  void Claimed(uint32_t segment, uint64_t end) override;
  // A commit into the grant ending at `end` (segment offset) succeeded.
  void Committed(uint32_t segment, uint64_t end);
  // True when the held grant's registration is bound to the connection
  // and has a floor (INFO server, tests).
  bool fenced() const { return conn_bound_ && floor_ok_; }
  GrantHolder(const GrantHolder&) = delete;
  GrantHolder& operator=(const GrantHolder&) = delete;

  // Takes a fresh segment (replacing the one held, which is sealed only
  // once the new one is registered: on failure the old grant stays).
  // The delete reserve is used only when the log is otherwise full; such
  // a grant takes tombstones only (reserve_only()).
  // A REFILL replacing a grant at least half filled by successful commits
  // takes no token of the rate limit.
  // Errors: busy (over the connection's REFILL rate, or — holding no
  // grant — the keyspace's share is all granted; the message says when
  // to retry: "retry in N ms"), no_space (log full, even the reserve),
  // unavailable (registration failed), others from the keyspace.
  // `allow_reserve`: a tombstone waits (REFILL's for-delete flag); only
  // then may the keyspace's delete reserve be granted.
  Status Acquire(bool allow_reserve);
  // Deregisters, then seals: nothing more can be written or committed.
  Status Seal();
  // Deregisters, then returns the rest of the segment (BYE, shutdown).
  Status Return();

  bool held() const { return held_; }
  bool reserve_only() const { return reserve_; }
  const store::SegmentGrant& grant() const { return grant_; }
  // The grant as the wire carries it (accept, REFILL_ACK).
  protocol::Grant Describe() const;

 private:
  // Acquire without the limits: takes and registers a segment.
  Status AcquireSegment(bool allow_reserve);
  // Deregisters the current write region (if any).
  void Deregister();
  // Deregisters and seals the held grant; the quota still counts it.
  Status SealHeld();
  // The quota stops counting this connection's grant.
  void ReleaseQuota();

  rpma_peer* const peer_;
  store::Keyspace* const keyspace_;
  GrantQuota* const quota_;
  TokenBucket refills_;
  bool counted_ = false;  // quota_ counts a grant of ours
  bool held_ = false;
  bool reserve_ = false;
  store::SegmentGrant grant_{};
  rpma_mr_local* mr_ = nullptr;
  uint8_t desc_[protocol::kDescriptorSize] = {};
  rpma_conn* conn_ = nullptr;
  bool conn_bound_ = false;  // mr_ is reachable through conn_ only
  bool floor_ok_ = true;     // rpma_mr_advance works on mr_
  uint64_t floor_ = 0;       // bytes of mr_ below its remote floor
  uint64_t committed_ = 0;   // bytes of the grant up to its last ok commit
};

}  // namespace kv::server

#endif  // KV_SERVER_GRANTS_H_
