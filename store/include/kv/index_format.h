// The hash index format: 64-byte buckets of eight 8-byte slots.
//
// Published format: clients read buckets with one-sided RDMA reads and
// decode them with this header, so it must not depend on store code. The
// prose twin is docs/format.md ("Hash index"). Header-only, thread-safe
// (pure functions).
//
// A slot is one little-endian uint64_t, changed only by atomic 8-byte
// stores (the commit protocol is in docs/format.md):
//
//   bits 63..48  fingerprint   (16 bits of the key hash, never 0)
//   bits 47..32  length        (record length in 64-byte units, 1..65535)
//   bits 31..0   offset        (record offset in the keyspace log, 64-byte
//                               units, so a log is at most 256 GiB)
//
// The all-zero slot is empty. A key lives in its home bucket
// HomeBucket(hash, bucket_count) or in the kProbeBuckets - 1 buckets after
// it; the index holds bucket_count + kProbeBuckets - 1 buckets so a probe
// never wraps, and a reader fetches the whole neighbourhood
// (kProbeBuckets * 64 bytes) in one read. While an update is in flight a
// key can be in two slots; the record with the higher sequence is the
// key's version, so a reader takes the newest valid match.
#ifndef KV_INDEX_FORMAT_H_
#define KV_INDEX_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kv::index_format {

inline constexpr size_t kUnit = 64;  // record alignment and length unit
inline constexpr size_t kBucketSize = 64;
inline constexpr size_t kSlotSize = 8;
inline constexpr size_t kSlotsPerBucket = kBucketSize / kSlotSize;
inline constexpr size_t kProbeBuckets = 2;
inline constexpr uint64_t kMaxRecordUnits = 0xffff;
inline constexpr uint64_t kMaxLogUnits = 1ull << 32;

struct SlotFields {
  uint16_t fingerprint = 0;
  uint16_t units = 0;         // record length / 64
  uint32_t offset_units = 0;  // record offset in the log / 64
};

constexpr uint64_t PackSlot(const SlotFields& f) {
  return (uint64_t{f.fingerprint} << 48) | (uint64_t{f.units} << 32) |
         uint64_t{f.offset_units};
}

constexpr SlotFields UnpackSlot(uint64_t slot) {
  return SlotFields{static_cast<uint16_t>(slot >> 48),
                    static_cast<uint16_t>(slot >> 32),
                    static_cast<uint32_t>(slot)};
}

// Where a slot's record lives, in bytes of the keyspace log.
constexpr uint64_t SlotLogOffset(uint64_t slot) {
  return uint64_t{UnpackSlot(slot).offset_units} * kUnit;
}
constexpr uint64_t SlotRecordBytes(uint64_t slot) {
  return uint64_t{UnpackSlot(slot).units} * kUnit;
}

// A slot can name a committed record only if it is non-empty in both
// fields and its record lies inside the log without crossing a segment.
constexpr bool SlotInBounds(uint64_t slot, uint64_t log_size,
                            uint64_t segment_size) {
  const SlotFields f = UnpackSlot(slot);
  if (f.units == 0 || f.fingerprint == 0 || segment_size == 0) return false;
  const uint64_t begin = SlotLogOffset(slot);
  const uint64_t end = begin + SlotRecordBytes(slot);
  return end <= log_size && begin / segment_size == (end - 1) / segment_size;
}

// murmur3's 64-bit finalizer.
constexpr uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

// The 64-bit key hash every party computes the same way (docs/format.md):
// h = 0x243f6a8885a308d3 ^ (len * 0x9e3779b97f4a7c15); for each 8-byte
// little-endian word w of the key (the last one zero-padded):
// h = rotl64((h ^ Fmix64(w)) * 0x9e3779b97f4a7c15, 31); result Fmix64(h ^ len).
inline uint64_t HashKey(std::string_view key) {
  const uint64_t len = key.size();
  uint64_t h = 0x243f6a8885a308d3ull ^ (len * 0x9e3779b97f4a7c15ull);
  size_t i = 0;
  while (i < key.size()) {
    uint8_t b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const size_t n = key.size() - i < 8 ? key.size() - i : 8;
    std::memcpy(b, key.data() + i, n);
    uint64_t w = 0;
    for (int j = 7; j >= 0; j--) w = (w << 8) | b[j];  // little-endian
    h = (h ^ Fmix64(w)) * 0x9e3779b97f4a7c15ull;
    h = (h << 31) | (h >> 33);
    i += n;
  }
  return Fmix64(h ^ len);
}

// Bits 32.. of the hash pick the bucket (bucket_count is a power of two).
constexpr uint64_t HomeBucket(uint64_t hash, uint64_t bucket_count) {
  return (hash >> 32) & (bucket_count - 1);
}

// The low 16 bits are the fingerprint; 0 is reserved for "empty".
constexpr uint16_t Fingerprint(uint64_t hash) {
  const auto fp = static_cast<uint16_t>(hash & 0xffff);
  return fp == 0 ? 1 : fp;
}

// Buckets physically present for a given power-of-two bucket_count.
constexpr uint64_t PhysicalBuckets(uint64_t bucket_count) {
  return bucket_count + kProbeBuckets - 1;
}

// ---------------------------------------------------------------------------
// The index header and the readers' fence (format 2; docs/format.md,
// "Index growth").
//
// An index grows online by doubling in place: bucket b splits into b and
// b + bucket_count by one more hash bit, the new buckets being appended
// after the old ones, so a reader holding the old bucket_count still reads
// inside the index — but a key whose home moved is no longer where that
// reader looks. The header tells the reader which geometry is current.
// It is the first kIndexHeaderSize bytes of the keyspace's read region
// (read-region offset 0; the index starts kIndexHeaderBytes later):
//
//   0 8 word   bits 63..8 generation (1 at create, +1 per growth)
//              bits  7..0 log2(bucket_count)
//   8 8 check  ~word (a read that tore across an update fails the check)
//
// The fence, for every reader of a remote or local index: a reader may
// conclude "not found" only after reading the header AFTER the
// neighbourhood (same queue pair, later in posting order, or a later round
// trip) and finding the bucket_count it used. A growth copies moved slots
// into the new buckets first, then publishes the header, then clears the
// moved slots' old positions; so a reader that still sees its generation
// in the header read its neighbourhood before anything left it. A slot
// that a reader does find is the key's current version whatever the
// geometry (growth never moves a slot backwards, and no commit is
// acknowledged while a growth runs). A reader that finds another
// bucket_count adopts it and reads again; index_offset never changes.
inline constexpr size_t kIndexHeaderSize = 16;
// Bytes a keyspace's region reserves for the header before the index.
inline constexpr uint64_t kIndexHeaderBytes = 4096;

struct IndexHeader {
  uint64_t generation = 0;    // 1..2^56 - 1
  uint64_t bucket_count = 0;  // power of two
};

constexpr uint64_t PackIndexWord(const IndexHeader& h) {
  uint64_t log2 = 0;
  while ((uint64_t{1} << log2) < h.bucket_count) log2++;
  return (h.generation << 8) | log2;
}

constexpr IndexHeader UnpackIndexWord(uint64_t word) {
  return IndexHeader{word >> 8, uint64_t{1} << (word & 0x3f)};
}

// Writes the header's 16 bytes (little-endian) into out.
inline void EncodeIndexHeader(const IndexHeader& h,
                              uint8_t out[kIndexHeaderSize]) {
  const uint64_t word = PackIndexWord(h);
  const uint64_t check = ~word;
  for (int i = 0; i < 8; i++) {
    out[i] = static_cast<uint8_t>(word >> (8 * i));
    out[8 + i] = static_cast<uint8_t>(check >> (8 * i));
  }
}

// Decodes header bytes a reader fetched. false when they do not form a
// valid header: torn across an update (read again), or not a header at
// all (generation 0, more than 2^40 buckets).
inline bool DecodeIndexHeader(const uint8_t in[kIndexHeaderSize],
                              IndexHeader* out) {
  uint64_t word = 0;
  uint64_t check = 0;
  for (int i = 7; i >= 0; i--) {
    word = (word << 8) | in[i];
    check = (check << 8) | in[8 + i];
  }
  if (check != ~word || (word >> 8) == 0 || (word & 0xff) > 40) return false;
  *out = UnpackIndexWord(word);
  return true;
}

}  // namespace kv::index_format

#endif  // KV_INDEX_FORMAT_H_
