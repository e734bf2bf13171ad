// CommitLog: a keyspace's commit log (pool format 4) — a ring of 32-byte
// entries the server alone writes, right after the keyspace's log, and
// the checkpoint that says where a recovery starts reading it. A commit
// that changes a key writes one entry in the ranges of its own commit
// point, so a batch persists its records and entries (sequential bytes)
// instead of its index pages; a checkpoint persists the whole index and
// moves `start` past every entry it covers. docs/format.md, "Commit log".
//
// Entry (little-endian): lsn u64 (absolute; ring position lsn % entries),
// slot u64 (the index slot value: fingerprint, record units, record
// offset), sequence u64 (the record's), flags u32 (bit 0: tombstone), crc
// u32 (CRC32C of the 28 bytes before it, then of the keyspace id).
// Checkpoint: two 32-byte copies in the index header page after its
// 16-byte header: generation u64, start u64, entries u64, magic u32, crc
// u32 (CRC32C of the 28 bytes before it); the intact copy with the higher
// generation holds.
//
// Thread-safety: Append and Checkpoint may be called from any thread at
// once; Load, Pending and Reset only while nothing else runs (open).
#ifndef KV_STORE_SRC_COMMIT_LOG_H_
#define KV_STORE_SRC_COMMIT_LOG_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "kv/store/persister.h"

namespace kv::store {

namespace commit_log {
inline constexpr uint64_t kEntrySize = 32;
inline constexpr uint32_t kTombstone = 1;
// The checkpoint's two copies: index header page bytes [16, 80).
inline constexpr uint64_t kCheckpointOffset = 16;
inline constexpr uint64_t kCheckpointCopySize = 32;
inline constexpr uint32_t kCheckpointMagic = 0x4b4c4f47;  // "GOLK"
inline constexpr uint64_t kMinEntries = 512;
inline constexpr uint64_t kMaxEntries = uint64_t{1} << 24;

struct Entry {
  uint64_t lsn = 0;
  uint64_t slot = 0;
  uint64_t sequence = 0;
  uint32_t flags = 0;
  bool tombstone() const { return (flags & kTombstone) != 0; }
};
// The bytes of an entry for keyspace `id`.
void EncodeEntry(const Entry& e, uint32_t id, uint8_t out[kEntrySize]);
// False when the CRC (for keyspace `id`) does not hold or flags has
// unknown bits.
bool DecodeEntry(const uint8_t in[kEntrySize], uint32_t id, Entry* out);

struct Checkpoint {
  uint64_t generation = 0;
  uint64_t start = 0;
  uint64_t entries = 0;
};
void EncodeCheckpoint(const Checkpoint& c, uint8_t out[kCheckpointCopySize]);
bool DecodeCheckpoint(const uint8_t in[kCheckpointCopySize], Checkpoint* out);
// The current checkpoint of the two copies at `copies` (the index header
// page + kCheckpointOffset): false when neither is intact or the intact
// one names another ring size than `entries`.
bool ReadCheckpoint(const uint8_t* copies, uint64_t entries, Checkpoint* out);
// Why the checkpoint at `copies` cannot be used ("" when it can).
std::string CheckpointProblem(const uint8_t* copies, uint64_t entries);
}  // namespace commit_log

class CommitLog {
 public:
  // `ring`: entries * 32 bytes; `checkpoint`: the index header page +
  // kCheckpointOffset. Both in the pool mapping.
  CommitLog(uint8_t* ring, uint64_t entries, uint8_t* checkpoint, uint32_t id,
            Persister* persister);
  CommitLog(const CommitLog&) = delete;
  CommitLog& operator=(const CommitLog&) = delete;

  // A new keyspace: both checkpoint copies {generation 1 and 2, start 0},
  // persisted. The ring must be zero.
  static void Format(uint8_t* checkpoint, uint64_t entries,
                     Persister* persister);

  // Reads the checkpoint (open); false when it cannot be used
  // (CheckpointProblem says why). Appends continue from its start.
  bool Load();
  uint64_t entries() const { return entries_; }
  uint64_t start() const;
  uint64_t next() const;

  // Calls fn for every entry a recovery reads: intact (CRC), its lsn in
  // [start, start + entries) and at its own ring position. Any order.
  void ForEachPending(
      const std::function<void(const commit_log::Entry&)>& fn) const;

  // Writes the entry of a commit whose slot change is already stored (so
  // that a checkpoint that covers its lsn covers the change) and returns
  // the bytes its commit point must persist — empty when a checkpoint
  // covered it meanwhile (the index on media then holds the change).
  // When the ring is full, runs `checkpoint` (which must call
  // Checkpoint) until the entry fits.
  Persister::Range Append(uint64_t slot, uint64_t sequence, bool tombstone,
                          const std::function<void()>& checkpoint);

  // A checkpoint: `persist_index` makes every slot change stored so far
  // durable; then `start` moves to the next lsn as it was before that
  // persist, durably. One at a time (the others wait).
  void Checkpoint(const std::function<void()>& persist_index);
  // Whether half the ring is past `start` (a checkpoint is due).
  bool HalfFull() const;
  // Recovery: after the replayed index is durable, entries below `next`
  // are never read again (start = next, durably).
  void Reset(uint64_t next, const std::function<void()>& persist_index);

 private:
  void WriteCheckpoint(uint64_t start);

  uint8_t* const ring_;
  const uint64_t entries_;
  uint8_t* const checkpoint_;
  const uint32_t id_;
  Persister* const persister_;
  mutable std::mutex mu_;  // next_, start_ and the ring's bytes
  uint64_t next_ = 0;
  uint64_t start_ = 0;
  std::mutex checkpoint_mu_;  // one checkpoint at a time; generation_
  uint64_t generation_ = 0;
};

}  // namespace kv::store

#endif  // KV_STORE_SRC_COMMIT_LOG_H_
