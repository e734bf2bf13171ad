// Segment grants and commit requests/results: the vocabulary between a
// writer (a local Writer or, through kvserver, a remote client) and a
// Keyspace. Plain structs.
#ifndef KV_STORE_SEGMENT_H_
#define KV_STORE_SEGMENT_H_

#include <cstdint>

namespace kv::store {

// A segment handed to one writer. The writer may write records in
// [log_offset + start, log_offset + size) of the keyspace log, appending,
// and owns those bytes until it seals or returns the grant.
struct SegmentGrant {
  uint32_t segment = 0;
  uint64_t grant_id = 0;    // identifies this grant; stale ids are refused
  uint64_t log_offset = 0;  // segment start, relative to the log start
  uint64_t start = 0;       // first writable byte within the segment
  uint32_t size = 0;        // segment size
  uint32_t keyspace_id = 0;
};

// A conditional write: applied only if the key's state matches.
enum class Condition : uint8_t {
  kNone = 0,
  kIfAbsent = 1,   // the key has no live version
  kIfVersion = 2,  // the key's live version has sequence expected_sequence
};

// "The record at `offset` (within the granted segment), `length` bytes
// (a multiple of 64), is written with sequence 0; assign it a sequence and
// make it durable and visible." key_hash must equal index_format::HashKey
// of the record's key.
enum class CommitOp : uint8_t { kAny, kPut, kDelete };

// Told when a commit has claimed its bytes: from then on the writer must
// not be able to change [0, end) of the segment (kvserver narrows the
// connection's write registration, so that the record the store verifies
// and seals is the record that stays). Called before verification, on
// the committing thread.
class ClaimFence {
 public:
  virtual ~ClaimFence() = default;
  virtual void Claimed(uint32_t segment, uint64_t end) = 0;
};

// Who a segment grant is for (which of the keyspace's reserved free
// segments it may take: see Keyspace::GrantSegment).
enum class GrantPurpose { kWrite, kDelete, kCleaner };

struct CommitRequest {
  uint32_t segment = 0;
  uint64_t grant_id = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t key_hash = 0;
  Condition condition = Condition::kNone;
  uint64_t expected_sequence = 0;  // for kIfVersion
  // What the writer says the record is; checked against the verified
  // record (kAny: a local writer that does not say).
  CommitOp op = CommitOp::kAny;
  // The grant is the keyspace's delete reserve: only tombstones commit.
  bool deletes_only = false;
  ClaimFence* fence = nullptr;  // optional; outlives the call
  // A replica's record: committed elsewhere (a shard's source during a
  // move, later its primary) and copied byte for byte — sealed, with its
  // sequence and absolute expiry, which the commit keeps (no condition;
  // the keyspace's own sequences move past it). The newest sequence of a
  // key wins: a record no newer than the key's version here changes
  // nothing (CommitResult::stale), so copies may arrive in any order.
  bool replica = false;
};

// Where a committed version of a key lives.
struct Version {
  uint64_t sequence = 0;
  uint64_t log_offset = 0;  // relative to the log start
  uint32_t length = 0;
  uint64_t expiry_ms = 0;  // absolute (Unix ms, server clock); 0: none
};

struct CommitResult {
  // The key existed (and had not expired) before this commit.
  bool had_previous = false;
  // The version this commit replaced or deleted: valid when had_previous,
  // and also when the key's slot held an expired version (had_previous
  // false: an expired key is absent, but its slot is reused or cleared).
  Version previous;
  bool tombstone = false;  // this commit was a delete
  Version committed;       // the new version (a delete: the tombstone)
  // A replica record (CommitRequest::replica) that was not newer than the
  // key's version here (or a replica delete of an absent key): nothing
  // changed, its bytes no longer verify.
  bool stale = false;
};

}  // namespace kv::store

#endif  // KV_STORE_SEGMENT_H_
