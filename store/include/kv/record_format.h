// The log record format: 64-byte aligned, immutable, self-checking.
//
// Published format: clients write records into their granted segment with
// one-sided writes and read them back with one-sided reads, so this header
// is self-contained (no store code). Prose twin: docs/format.md ("Records").
// Header-only; all functions are pure and thread-safe.
//
//   offset size  field
//        0    4  crc        CRC32C of bytes [4, 32 + key_len + x + value_len)
//                            (x = 8 with kFlagExpires, else 0)
//        4    2  flags      bit 0: tombstone; bit 1: expires; others 0
//        6    2  key_len    1..1024
//        8    4  value_len  0..kMaxValueSize (0 for a tombstone)
//       12    4  keyspace_id
//       16    8  sequence   non-zero, assigned by the keyspace at commit
//                            (a writer writes 0; see SealRecord)
//       24    8  key_hash   index_format::HashKey(key)
//       32       key bytes,
//                then, with kFlagExpires only, 8 bytes of expiry:
//                  unsealed (sequence 0, as a writer writes it): the time
//                  to live in milliseconds, 1..kMaxTtlMs;
//                  committed: the absolute expiry, Unix milliseconds of
//                  the server's clock (SealRecord stamps now + ttl),
//                then value bytes, then zero padding to 64 bytes.
//
// All integers little-endian. The padding is not covered by the CRC; the
// expiry is. A committed record with an expiry at or before the server's
// now is expired: every reader treats its key as absent (docs/format.md,
// "Expiring keys"). Format version 3 of the pool (the expires flag).
#ifndef KV_RECORD_FORMAT_H_
#define KV_RECORD_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kv/crc32c.h"
#include "kv/index_format.h"
#include "kv/status.h"

namespace kv::record_format {

inline constexpr size_t kHeaderSize = 32;
inline constexpr size_t kMinKeySize = 1;
inline constexpr size_t kMaxKeySize = 1024;
// Hard limit from the 16-bit slot length; keyspaces may set a lower one.
inline constexpr size_t kMaxValueSize =
    index_format::kMaxRecordUnits * index_format::kUnit - kHeaderSize -
    kMaxKeySize - index_format::kUnit;
inline constexpr size_t kDefaultMaxValueSize = 1 << 20;
inline constexpr uint16_t kFlagTombstone = 1;
// The record carries an 8-byte expiry after its key (format version 3).
inline constexpr uint16_t kFlagExpires = 2;
inline constexpr uint16_t kKnownFlags = kFlagTombstone | kFlagExpires;
inline constexpr size_t kExpirySize = 8;
// Times to live a writer may ask for: 1 ms .. 100 years (so that now + ttl
// never overflows and a typo of a few digits too many is refused).
inline constexpr uint64_t kMaxTtlMs = 100ull * 365 * 24 * 3600 * 1000;

// Whether `ttl_ms` is a time to live a writer may ask for; invalid_argument
// naming the limits otherwise. Clients check before sending, the keyspace
// again at commit (a writer's bytes are untrusted).
inline Status CheckTtl(int64_t ttl_ms) {
  if (ttl_ms < 1 || static_cast<uint64_t>(ttl_ms) > kMaxTtlMs) {
    return Status::InvalidArgument("time to live must be 1 ms .. 100 years (" +
                                   std::to_string(kMaxTtlMs) + " ms), got " +
                                   std::to_string(ttl_ms) + " ms");
  }
  return Status::Ok();
}

struct RecordHeader {
  uint32_t crc;
  uint16_t flags;
  uint16_t key_len;
  uint32_t value_len;
  uint32_t keyspace_id;
  uint64_t sequence;
  uint64_t key_hash;
};
static_assert(sizeof(RecordHeader) == kHeaderSize);

// Bytes a record of this key and value occupies in the log (64-aligned),
// with the 8-byte expiry when `expires`.
constexpr size_t RecordSize(size_t key_len, size_t value_len,
                            bool expires = false) {
  const size_t raw =
      kHeaderSize + key_len + (expires ? kExpirySize : 0) + value_len;
  return (raw + index_format::kUnit - 1) / index_format::kUnit *
         index_format::kUnit;
}

inline void PutExpiry(uint8_t* p, uint64_t v) {
  for (size_t i = 0; i < kExpirySize; i++) {
    p[i] = static_cast<uint8_t>(v >> (8 * i));
  }
}
inline uint64_t GetExpiry(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = kExpirySize; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// Writes a complete record into dst[0, RecordSize(key, value, expiry != 0))
// — header, key, expiry (when non-zero: a writer's time to live in ms, or
// a committed record's absolute expiry), value, zero padding — and returns
// its size. The caller checked the limits and makes the bytes durable
// before committing them.
inline size_t EncodeRecord(void* dst, uint32_t keyspace_id, uint64_t sequence,
                           bool tombstone, std::string_view key,
                           std::string_view value, uint64_t expiry = 0) {
  auto* p = static_cast<uint8_t*>(dst);
  const bool expires = expiry != 0;
  const size_t extra = expires ? kExpirySize : 0;
  const size_t size = RecordSize(key.size(), value.size(), expires);
  RecordHeader h{};
  h.flags = static_cast<uint16_t>((tombstone ? kFlagTombstone : 0) |
                                  (expires ? kFlagExpires : 0));
  h.key_len = static_cast<uint16_t>(key.size());
  h.value_len = static_cast<uint32_t>(value.size());
  h.keyspace_id = keyspace_id;
  h.sequence = sequence;
  h.key_hash = index_format::HashKey(key);
  std::memcpy(p, &h, kHeaderSize);
  std::memcpy(p + kHeaderSize, key.data(), key.size());
  if (expires) PutExpiry(p + kHeaderSize + key.size(), expiry);
  if (!value.empty()) {
    std::memcpy(p + kHeaderSize + key.size() + extra, value.data(),
                value.size());
  }
  const size_t used = kHeaderSize + key.size() + extra + value.size();
  std::memset(p + used, 0, size - used);
  h.crc = Crc32c(p + 4, used - 4);
  std::memcpy(p, &h.crc, 4);
  return size;
}

// A record as seen through VerifyRecord: views into the caller's buffer.
struct RecordView {
  RecordHeader header;
  std::string_view key;
  std::string_view value;
  // With kFlagExpires: unsealed, the writer's time to live (ms);
  // committed, the absolute expiry (Unix ms, server clock). 0 without.
  uint64_t expiry = 0;
  bool tombstone() const { return header.flags & kFlagTombstone; }
  bool expires() const { return header.flags & kFlagExpires; }
  // Bytes from the record's start to the end of its value (CRC'd + 4).
  size_t used() const {
    return kHeaderSize + key.size() + (expires() ? kExpirySize : 0) +
           value.size();
  }
};

// The padded size of a verified record (what its slot must say).
inline size_t RecordSizeOf(const RecordView& v) {
  return RecordSize(v.key.size(), v.value.size(), v.expires());
}

// Whether a committed record is expired at `now_ms` (the server's clock,
// Unix ms): it expires at its expiry, inclusive. Readers that judge by a
// clock with an error bound (clients) use their own rule
// (docs/protocol.md, "Server clock").
inline bool Expired(const RecordView& v, uint64_t now_ms) {
  return v.expires() && v.expiry <= now_ms;
}

// Whether VerifyRecord expects a committed record (sequence assigned) or
// one a writer has just written and not yet committed (sequence 0).
enum class SequenceRule { kCommitted, kUnsealed };

// Checks the record at p[0, avail) without trusting any of it: lengths,
// flags, that it fits in `avail`, CRC, key hash, keyspace id, the
// sequence (non-zero for kCommitted, exactly 0 for kUnsealed: sequences
// are the keyspace's to assign, never the writer's) and the expiry (a
// tombstone has none; kUnsealed: a time to live 1..kMaxTtlMs; kCommitted:
// non-zero). Returns corruption naming the first problem (invalid_argument
// for a writer-chosen sequence or a time to live out of range); on success
// fills *out.
inline Status VerifyRecord(const void* p, size_t avail,
                           uint32_t expected_keyspace_id, RecordView* out,
                           SequenceRule rule = SequenceRule::kCommitted) {
  if (avail < kHeaderSize) {
    return Status::Corruption("record: " + std::to_string(avail) +
                              " bytes cannot hold a 32-byte header");
  }
  RecordHeader h;
  std::memcpy(&h, p, kHeaderSize);
  if (h.key_len < kMinKeySize || h.key_len > kMaxKeySize) {
    return Status::Corruption("record: key length " +
                              std::to_string(h.key_len) + " outside 1..1024");
  }
  if (h.flags & ~kKnownFlags) {
    return Status::Corruption("record: unknown flags " +
                              std::to_string(h.flags));
  }
  const bool expires = h.flags & kFlagExpires;
  if (expires && (h.flags & kFlagTombstone)) {
    return Status::Corruption("record: a tombstone with an expiry");
  }
  const size_t extra = expires ? kExpirySize : 0;
  if (h.value_len > kMaxValueSize) {
    return Status::Corruption("record: value length " +
                              std::to_string(h.value_len) + " over the limit");
  }
  const size_t used = kHeaderSize + h.key_len + extra + h.value_len;
  if (used > avail) {
    return Status::Corruption("record: " + std::to_string(used) +
                              " bytes do not fit in its " +
                              std::to_string(avail) + "-byte extent");
  }
  const auto* b = static_cast<const uint8_t*>(p);
  if (Crc32c(b + 4, used - 4) != h.crc) {
    return Status::Corruption("record: CRC32C mismatch");
  }
  if (h.keyspace_id != expected_keyspace_id) {
    return Status::Corruption("record: belongs to keyspace id " +
                              std::to_string(h.keyspace_id) + ", expected " +
                              std::to_string(expected_keyspace_id));
  }
  if (rule == SequenceRule::kCommitted && h.sequence == 0) {
    return Status::Corruption("record: sequence 0");
  }
  if (rule == SequenceRule::kUnsealed && h.sequence != 0) {
    return Status::InvalidArgument(
        "record: sequence " + std::to_string(h.sequence) +
        " chosen by the writer; write 0, the keyspace assigns sequences at "
        "commit");
  }
  std::string_view key(reinterpret_cast<const char*>(b + kHeaderSize),
                       h.key_len);
  if (index_format::HashKey(key) != h.key_hash) {
    return Status::Corruption("record: key hash does not match its key");
  }
  const uint64_t expiry = expires ? GetExpiry(b + kHeaderSize + h.key_len) : 0;
  if (expires && rule == SequenceRule::kUnsealed &&
      (expiry < 1 || expiry > kMaxTtlMs)) {
    return Status::InvalidArgument("record: time to live of " +
                                   std::to_string(expiry) +
                                   " ms outside 1 ms .. 100 years");
  }
  if (expires && rule == SequenceRule::kCommitted && expiry == 0) {
    return Status::Corruption("record: expiry 0");
  }
  if (out != nullptr) {
    out->header = h;
    out->key = key;
    out->value = std::string_view(key.data() + h.key_len + extra, h.value_len);
    out->expiry = expiry;
  }
  return Status::Ok();
}

// Gives a verified unsealed record its sequence: rewrites the header from
// `verified` (what VerifyRecord accepted — never re-read from p, whose
// writer may still be changing it) with `sequence` and, for an expiring
// record, stamps the absolute expiry now_ms + the verified time to live
// (the server's clock decides; the writer only chose a duration), then
// stores the CRC recomputed over the record's bytes. The caller persists
// the record afterwards (the commit does, together with the slot).
inline void SealRecord(void* p, const RecordView& verified, uint64_t sequence,
                       uint64_t now_ms) {
  auto* b = static_cast<uint8_t*>(p);
  RecordHeader h = verified.header;
  h.sequence = sequence;
  h.crc = 0;
  std::memcpy(b, &h, kHeaderSize);
  if (verified.expires()) {
    PutExpiry(b + kHeaderSize + h.key_len, now_ms + verified.expiry);
  }
  const size_t used = verified.used();
  h.crc = Crc32c(b + 4, used - 4);
  std::memcpy(b, &h.crc, 4);
}

// Rewrites a verified committed record (a replica's copy) exactly as
// verified: header (sequence included) and absolute expiry from
// `verified`, never re-read from p, then the CRC recomputed over the
// bytes — so that what the commit stores is what it checked, however the
// sender changes the bytes meanwhile (as SealRecord does for a writer).
inline void ResealRecord(void* p, const RecordView& verified) {
  auto* b = static_cast<uint8_t*>(p);
  RecordHeader h = verified.header;
  h.crc = 0;
  std::memcpy(b, &h, kHeaderSize);
  if (verified.expires())
    PutExpiry(b + kHeaderSize + h.key_len, verified.expiry);
  const size_t used = verified.used();
  h.crc = Crc32c(b + 4, used - 4);
  std::memcpy(b, &h.crc, 4);
}

// Undoes SealRecord for a record that was sealed but then not committed:
// zeroes its header, so that it can never verify (as committed or as an
// unsealed record awaiting commit).
inline void UnsealRecord(void* p) { std::memset(p, 0, kHeaderSize); }

}  // namespace kv::record_format

#endif  // KV_RECORD_FORMAT_H_
