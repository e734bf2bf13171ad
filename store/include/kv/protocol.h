// The client <-> kvserver protocol: connect/accept private data and the
// messages exchanged over the connection's SEND/RECV queue.
//
// Published format, header-only, shared by server/ and client/ (and the
// fuzzers). Prose twin: docs/protocol.md — change both together. Every
// integer is little-endian at a fixed offset; encoders write exactly the
// documented bytes, decoders trust nothing: each returns a Status naming
// the first problem (truncated, bad magic, unknown version, field out of
// range) and never reads past the buffer. Pure functions; thread-safe.
#ifndef KV_PROTOCOL_H_
#define KV_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "kv/index_format.h"
#include "kv/keyspace_name.h"
#include "kv/record_format.h"
#include "kv/status.h"

namespace kv::protocol {

inline constexpr uint32_t kMagic = 0x564b5052;  // "RPKV" little-endian
// 3: the index grows online; readers fence on the index header at
// read-region offset 0 (kv/index_format.h). A version-2 client would take
// a key whose home moved for absent, so it is refused (docs/protocol.md,
// "Versions").
// 4: records may carry an expiry (record_format.h kFlagExpires) and the
// INFO ping reply carries the server's clock (PingText). A version-3
// client would fail such a record as corrupt, so it is refused.
inline constexpr uint8_t kVersion = 4;
// Limits of rdma_cm over InfiniBand/RoCE; the tcp provider enforces them.
inline constexpr size_t kMaxConnectPdata = 56;
inline constexpr size_t kMaxAcceptPdata = 196;
// Names up to this long travel in the connect private data; longer ones
// (and every access key) in a HELLO message.
inline constexpr size_t kInlineNameMax = 40;
inline constexpr size_t kMaxAccessKey = 64;
// librpma's memory region descriptor (rpma_mr_get_descriptor_size()).
inline constexpr size_t kDescriptorSize = 21;
// Every message fits one receive buffer of this size.
inline constexpr size_t kMaxMessage = 4096;

// ---------------------------------------------------------------------------
// Little-endian field access (bounds are the caller's: offsets are fixed).
inline void Put8(uint8_t* p, size_t off, uint8_t v) { p[off] = v; }
inline void Put16(uint8_t* p, size_t off, uint16_t v) {
  for (int i = 0; i < 2; i++) p[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void Put32(uint8_t* p, size_t off, uint32_t v) {
  for (int i = 0; i < 4; i++) p[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void Put64(uint8_t* p, size_t off, uint64_t v) {
  for (int i = 0; i < 8; i++) p[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t Get16(const uint8_t* p, size_t off) {
  return static_cast<uint16_t>(p[off] | (p[off + 1] << 8));
}
inline uint32_t Get32(const uint8_t* p, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[off + i];
  return v;
}
inline uint64_t Get64(const uint8_t* p, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[off + i];
  return v;
}

// ---------------------------------------------------------------------------
// Connect private data (client -> server), 52 bytes:
//   0 4 magic   4 1 version   5 1 flags   6 1 name_len   7 1 reserved (0)
//   8 4 map_epoch (0 outside a cluster)   12 40 name (name_len bytes used)
// With kConnectTicket, name_len is 16 and the name field holds the ticket
// of a WELCOME that said kReconnect (binary, not a keyspace name).
inline constexpr uint8_t kConnectCreate = 1;  // create the keyspace if missing
inline constexpr uint8_t kConnectHello = 2;   // name/key follow in HELLO
inline constexpr uint8_t kConnectTicket = 4;  // admitted by HELLO: a ticket
inline constexpr uint8_t kConnectFlagsKnown =
    kConnectCreate | kConnectHello | kConnectTicket;
// A one-time admission ticket (random, from the server's CSPRNG).
inline constexpr size_t kTicketSize = 16;
inline constexpr size_t kConnectHeader = 12;
inline constexpr size_t kConnectSize = kConnectHeader + kInlineNameMax;
static_assert(kConnectSize <= kMaxConnectPdata);

struct Connect {
  uint8_t flags = 0;
  uint32_t map_epoch = 0;
  std::string name;  // empty when kConnectHello; the ticket's bytes when
                     // kConnectTicket
};

inline size_t EncodeConnect(const Connect& c, uint8_t out[kConnectSize]) {
  std::memset(out, 0, kConnectSize);
  Put32(out, 0, kMagic);
  Put8(out, 4, kVersion);
  Put8(out, 5, c.flags);
  const size_t n = c.name.size() <= kInlineNameMax ? c.name.size() : 0;
  Put8(out, 6, static_cast<uint8_t>(n));
  Put32(out, 8, c.map_epoch);
  std::memcpy(out + kConnectHeader, c.name.data(), n);
  return kConnectSize;
}

// A NIC may deliver the private data zero-padded: bytes past the fields
// are ignored. A connect without kConnectHello must carry a valid name.
inline Status DecodeConnect(const void* data, size_t len, Connect* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (data == nullptr || len < kConnectHeader) {
    return Status::InvalidArgument(
        "connect private data truncated: " + std::to_string(len) +
        " bytes, need " + std::to_string(kConnectHeader));
  }
  if (Get32(p, 0) != kMagic) {
    return Status::InvalidArgument(
        "connect private data: bad magic (not an "
        "rpkv client?)");
  }
  if (p[4] != kVersion) {
    return Status::InvalidArgument(
        "connect private data: protocol version " + std::to_string(p[4]) +
        " not supported (server speaks " + std::to_string(kVersion) + ")");
  }
  const uint8_t flags = p[5];
  if (flags & ~kConnectFlagsKnown) {
    return Status::InvalidArgument("connect private data: unknown flags " +
                                   std::to_string(flags));
  }
  const size_t n = p[6];
  if (n > kInlineNameMax) {
    return Status::InvalidArgument("connect private data: name length " +
                                   std::to_string(n) + " over " +
                                   std::to_string(kInlineNameMax));
  }
  if (len < kConnectHeader + n) {
    return Status::InvalidArgument(
        "connect private data truncated inside the keyspace name");
  }
  out->flags = flags;
  out->map_epoch = Get32(p, 8);
  out->name.assign(reinterpret_cast<const char*>(p + kConnectHeader), n);
  if ((flags & kConnectTicket) &&
      ((flags & kConnectHello) || n != kTicketSize)) {
    return Status::InvalidArgument(
        "connect private data: a ticket is 16 bytes, without HELLO");
  }
  if (!(flags & (kConnectHello | kConnectTicket))) {
    Status st = ValidateKeyspaceName(out->name);
    if (!st.ok()) return Status::InvalidArgument("connect: " + st.message());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Admission status: accept private data and WELCOME carry one.
enum class Admit : uint8_t {
  kOk = 0,
  kHelloRequired = 1,  // not a refusal: send HELLO, WELCOME follows
  kBadMagic = 2,
  kBadVersion = 3,
  kMalformed = 4,
  kUnknownKeyspace = 5,
  kTooManyConnections = 6,
  kAccessDenied = 7,  // access key missing or wrong
  kNoSpace = 8,       // no log segment free to grant
  kServerError = 9,
  kShuttingDown = 10,
  kWrongShard = 11,  // cluster: stale map (unused by a single server)
  // Not a refusal: HELLO was accepted; connect again with the ticket (the
  // new connection is made in the keyspace's protection domain).
  kReconnect = 12,
  kMax = kReconnect,
};

constexpr std::string_view AdmitName(Admit a) {
  switch (a) {
    case Admit::kOk:
      return "ok";
    case Admit::kHelloRequired:
      return "hello required";
    case Admit::kBadMagic:
      return "bad magic";
    case Admit::kBadVersion:
      return "unsupported protocol version";
    case Admit::kMalformed:
      return "malformed request";
    case Admit::kUnknownKeyspace:
      return "unknown keyspace";
    case Admit::kTooManyConnections:
      return "too many connections";
    case Admit::kAccessDenied:
      return "access denied";
    case Admit::kNoSpace:
      return "no space";
    case Admit::kServerError:
      return "server error";
    case Admit::kShuttingDown:
      return "server shutting down";
    case Admit::kWrongShard:
      return "wrong shard";
    case Admit::kReconnect:
      return "reconnect with ticket";
  }
  return "unknown";
}

// A grant: the segment a connection appends to, and the write registration
// over exactly its writable bytes (the descriptor's region starts at the
// grant's start: remote offset 0 = segment offset `start`).
inline constexpr uint8_t kGrantDeletesOnly = 1;  // the reserve: tombstones only

struct Grant {
  uint8_t flags = 0;  // kGrantDeletesOnly
  uint32_t segment = 0;
  uint64_t grant_id = 0;
  uint64_t start = 0;  // first writable byte within the segment
  uint32_t size = 0;   // segment size; writable: [start, size)
  uint8_t write_desc[kDescriptorSize] = {};
};

// Accept private data (server -> client), also the WELCOME payload, 196
// bytes:
//   0 4 magic   4 1 version   5 1 admit   6 1 flags   7 1 reserved
//   8 4 map_epoch   12 4 keyspace_id   16 8 bucket_count (now: the index
//   grows; later growths show in the index header)   24 8 log_size
//   32 4 segment_size   36 4 max_value_size   40 8 index_offset
//   48 8 log_offset (both from the start of the read region)
//   56 21 read descriptor (admit = reconnect: 56 16 the ticket instead)
//   77 3 reserved
//   80 4 grant.segment   84 4 grant.size   88 8 grant.grant_id
//   96 8 grant.start   104 21 grant write descriptor   125 1 grant.flags
//   (no grant at all — a full keyspace admits readers — is size 0)
//   126 2 max_inflight   128 8 session_id   136 60 reason (text, NUL-padded)
inline constexpr uint8_t kAcceptPmem = 1;  // cache-line granularity pool
inline constexpr size_t kAcceptSize = 196;
inline constexpr size_t kReasonOffset = 136;
inline constexpr size_t kReasonMax = kAcceptSize - kReasonOffset;
static_assert(kAcceptSize <= kMaxAcceptPdata);

struct Accept {
  Admit admit = Admit::kOk;
  uint8_t flags = 0;
  uint32_t map_epoch = 0;
  uint32_t keyspace_id = 0;
  uint64_t bucket_count = 0;
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
  uint64_t index_offset = 0;
  uint64_t log_offset = 0;
  uint8_t read_desc[kDescriptorSize] = {};
  Grant grant;
  uint16_t max_inflight = 0;
  uint64_t session_id = 0;
  std::string reason;  // for a refusal: what to do about it (<= 59 bytes)
  uint8_t ticket[kTicketSize] = {};  // admit == kReconnect only
};

inline size_t EncodeAccept(const Accept& a, uint8_t out[kAcceptSize]) {
  std::memset(out, 0, kAcceptSize);
  Put32(out, 0, kMagic);
  Put8(out, 4, kVersion);
  Put8(out, 5, static_cast<uint8_t>(a.admit));
  Put8(out, 6, a.flags);
  Put32(out, 8, a.map_epoch);
  Put32(out, 12, a.keyspace_id);
  Put64(out, 16, a.bucket_count);
  Put64(out, 24, a.log_size);
  Put32(out, 32, a.segment_size);
  Put32(out, 36, a.max_value_size);
  Put64(out, 40, a.index_offset);
  Put64(out, 48, a.log_offset);
  if (a.admit == Admit::kReconnect) {
    std::memcpy(out + 56, a.ticket, kTicketSize);
  } else {
    std::memcpy(out + 56, a.read_desc, kDescriptorSize);
  }
  Put32(out, 80, a.grant.segment);
  Put32(out, 84, a.grant.size);
  Put64(out, 88, a.grant.grant_id);
  Put64(out, 96, a.grant.start);
  std::memcpy(out + 104, a.grant.write_desc, kDescriptorSize);
  Put8(out, 125, a.grant.flags);
  Put16(out, 126, a.max_inflight);
  Put64(out, 128, a.session_id);
  const size_t n =
      a.reason.size() < kReasonMax ? a.reason.size() : kReasonMax - 1;
  std::memcpy(out + kReasonOffset, a.reason.data(), n);
  return kAcceptSize;
}

// Decodes and checks what a client relies on: for kOk, a geometry a reader
// can use safely (power-of-two buckets, segment size a multiple of 64, a
// grant inside its segment).
inline Status DecodeAccept(const void* data, size_t len, Accept* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (data == nullptr || len < kAcceptSize) {
    return Status::Unavailable(
        "accept private data truncated: " + std::to_string(len) +
        " bytes, need " + std::to_string(kAcceptSize) +
        " (not an rpkv server?)");
  }
  if (Get32(p, 0) != kMagic) {
    return Status::Unavailable(
        "accept private data: bad magic (not an rpkv "
        "server?)");
  }
  if (p[4] != kVersion) {
    return Status::Unavailable("server speaks protocol version " +
                               std::to_string(p[4]) + ", this client " +
                               std::to_string(kVersion));
  }
  if (p[5] > static_cast<uint8_t>(Admit::kMax)) {
    return Status::Unavailable("accept: unknown admission status " +
                               std::to_string(p[5]));
  }
  Accept a;
  a.admit = static_cast<Admit>(p[5]);
  a.flags = p[6];
  a.map_epoch = Get32(p, 8);
  a.keyspace_id = Get32(p, 12);
  a.bucket_count = Get64(p, 16);
  a.log_size = Get64(p, 24);
  a.segment_size = Get32(p, 32);
  a.max_value_size = Get32(p, 36);
  a.index_offset = Get64(p, 40);
  a.log_offset = Get64(p, 48);
  if (a.admit == Admit::kReconnect) {
    std::memcpy(a.ticket, p + 56, kTicketSize);
  } else {
    std::memcpy(a.read_desc, p + 56, kDescriptorSize);
  }
  a.grant.segment = Get32(p, 80);
  a.grant.size = Get32(p, 84);
  a.grant.grant_id = Get64(p, 88);
  a.grant.start = Get64(p, 96);
  std::memcpy(a.grant.write_desc, p + 104, kDescriptorSize);
  a.grant.flags = p[125];
  a.max_inflight = Get16(p, 126);
  a.session_id = Get64(p, 128);
  a.reason.assign(
      reinterpret_cast<const char*>(p + kReasonOffset),
      strnlen(reinterpret_cast<const char*>(p + kReasonOffset), kReasonMax));
  if (a.admit == Admit::kOk) {
    const bool pow2 =
        a.bucket_count != 0 && (a.bucket_count & (a.bucket_count - 1)) == 0;
    if (!pow2 || a.segment_size == 0 || a.segment_size % 64 != 0 ||
        a.log_size % a.segment_size != 0 ||
        (a.grant.size != a.segment_size && a.grant.size != 0) ||
        a.grant.start > a.grant.size || a.max_inflight == 0) {
      return Status::Corruption("accept: inconsistent keyspace geometry");
    }
    // A server's numbers are a peer's too: bounded so that no size a
    // client derives from them (index bytes, arena) can overflow.
    if (a.bucket_count > (uint64_t{1} << 40) ||
        a.log_size > index_format::kMaxLogUnits * index_format::kUnit ||
        a.max_value_size > record_format::kMaxValueSize) {
      return Status::Corruption("accept: keyspace geometry out of range");
    }
  }
  *out = std::move(a);
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Messages. Header, 16 bytes:
//   0 2 magic 0x564b ("KV")   2 1 version   3 1 type   4 4 request_id
//   8 4 payload length        12 4 map_epoch
// then the payload (length bytes; header + payload <= kMaxMessage).
inline constexpr uint16_t kMessageMagic = 0x564b;
inline constexpr size_t kHeaderSize = 16;

enum class Type : uint8_t {
  kHello = 1,      // c->s: name, flags, access key
  kWelcome = 2,    // s->c: an Accept (the accept private data's twin)
  kCommit = 3,     // c->s: make a written record durable and visible
  kCommitAck = 4,  // s->c: its result
  kRefill = 5,     // c->s: the grant is full; seal it, grant another
  kRefillAck = 6,  // s->c: the new grant (or why not)
  kInfo = 7,       // c->s: stats or the keyspace list
  kInfoAck = 8,    // s->c: text
  kBye = 9,        // c->s: return the grant's tail, then disconnect
  kError = 10,     // s->c: the last message was refused; disconnecting
  kMaxType = kError,
};

struct Header {
  Type type = Type::kError;
  uint32_t request_id = 0;
  uint32_t length = 0;
  uint32_t map_epoch = 0;
};

inline void EncodeHeader(const Header& h, uint8_t* out) {
  Put16(out, 0, kMessageMagic);
  Put8(out, 2, kVersion);
  Put8(out, 3, static_cast<uint8_t>(h.type));
  Put32(out, 4, h.request_id);
  Put32(out, 8, h.length);
  Put32(out, 12, h.map_epoch);
}

// Checks magic, version, type and that the payload lies inside `len`.
inline Status DecodeHeader(const void* data, size_t len, Header* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (data == nullptr || len < kHeaderSize) {
    return Status::InvalidArgument("message truncated: " + std::to_string(len) +
                                   " bytes");
  }
  if (Get16(p, 0) != kMessageMagic) {
    return Status::InvalidArgument("message: bad magic");
  }
  if (p[2] != kVersion) {
    return Status::InvalidArgument("message: protocol version " +
                                   std::to_string(p[2]) + " not supported");
  }
  if (p[3] == 0 || p[3] > static_cast<uint8_t>(Type::kMaxType)) {
    return Status::InvalidArgument("message: unknown type " +
                                   std::to_string(p[3]));
  }
  const uint32_t length = Get32(p, 8);
  if (length > len - kHeaderSize || length > kMaxMessage - kHeaderSize) {
    return Status::InvalidArgument("message: payload of " +
                                   std::to_string(length) +
                                   " bytes exceeds what was received");
  }
  out->type = static_cast<Type>(p[3]);
  out->request_id = Get32(p, 4);
  out->length = length;
  out->map_epoch = Get32(p, 12);
  return Status::Ok();
}

// HELLO payload, 130 bytes: 0 1 flags (kConnectCreate, kHelloPeer)
//   1 1 name_len (1..63)  2 1 key_len (0..64)  3 1 reserved  4 63 name
//   67 64 key (as used)
inline constexpr size_t kHelloSize = 4 + kMaxKeyspaceNameSize + kMaxAccessKey;
// A peer kvserver of a cluster (docs/cluster.md, "Moving a shard: the
// protocol"): the key is the cluster's peer key, and the session sends
// replica COMMITs (kCommitReplica) only. Not with kConnectCreate.
inline constexpr uint8_t kHelloPeer = 8;
struct Hello {
  uint8_t flags = 0;
  std::string name;
  std::string access_key;
};

inline size_t EncodeHello(const Hello& h, uint8_t* payload) {
  std::memset(payload, 0, kHelloSize);
  const size_t n = h.name.size() <= kMaxKeyspaceNameSize ? h.name.size() : 0;
  const size_t k =
      h.access_key.size() <= kMaxAccessKey ? h.access_key.size() : 0;
  Put8(payload, 0, h.flags & (kConnectCreate | kHelloPeer));
  Put8(payload, 1, static_cast<uint8_t>(n));
  Put8(payload, 2, static_cast<uint8_t>(k));
  std::memcpy(payload + 4, h.name.data(), n);
  std::memcpy(payload + 4 + kMaxKeyspaceNameSize, h.access_key.data(), k);
  return kHelloSize;
}

inline Status DecodeHello(const uint8_t* payload, size_t len, Hello* out) {
  if (len < kHelloSize) return Status::InvalidArgument("HELLO truncated");
  if (payload[0] & ~(kConnectCreate | kHelloPeer)) {
    return Status::InvalidArgument("HELLO: unknown flags");
  }
  if ((payload[0] & kConnectCreate) && (payload[0] & kHelloPeer)) {
    return Status::InvalidArgument("HELLO: a peer creates no keyspace");
  }
  const size_t n = payload[1], k = payload[2];
  if (n > kMaxKeyspaceNameSize || k > kMaxAccessKey) {
    return Status::InvalidArgument("HELLO: name or key length out of range");
  }
  out->flags = payload[0];
  out->name.assign(reinterpret_cast<const char*>(payload + 4), n);
  out->access_key.assign(
      reinterpret_cast<const char*>(payload + 4 + kMaxKeyspaceNameSize), k);
  Status st = ValidateKeyspaceName(out->name);
  if (!st.ok()) return Status::InvalidArgument("HELLO: " + st.message());
  return Status::Ok();
}

// COMMIT payload, 48 bytes:
//   0 1 op (0 put, 1 delete)   1 1 condition (0 none, 1 if absent,
//   2 if version)   2 1 flags (kCommitReplica)   3 1 reserved
//   4 4 segment   8 8 grant_id
//   16 8 offset (within the segment)   24 4 length   28 4 reserved
//   32 8 key_hash   40 8 expected_sequence
inline constexpr size_t kCommitSize = 48;
// The record is a replica's copy, sealed by the shard's owner (store
// CommitRequest::replica): only from a peer session (kHelloPeer), with no
// condition. A server before this flag ignored the byte and refused the
// sealed record.
inline constexpr uint8_t kCommitReplica = 1;
struct Commit {
  uint8_t op = 0;
  uint8_t condition = 0;
  uint8_t flags = 0;
  uint32_t segment = 0;
  uint64_t grant_id = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint64_t key_hash = 0;
  uint64_t expected_sequence = 0;
};

inline size_t EncodeCommit(const Commit& c, uint8_t* payload) {
  std::memset(payload, 0, kCommitSize);
  Put8(payload, 0, c.op);
  Put8(payload, 1, c.condition);
  Put8(payload, 2, c.flags);
  Put32(payload, 4, c.segment);
  Put64(payload, 8, c.grant_id);
  Put64(payload, 16, c.offset);
  Put32(payload, 24, c.length);
  Put64(payload, 32, c.key_hash);
  Put64(payload, 40, c.expected_sequence);
  return kCommitSize;
}

inline Status DecodeCommit(const uint8_t* payload, size_t len, Commit* out) {
  if (len < kCommitSize) return Status::InvalidArgument("COMMIT truncated");
  if (payload[0] > 1) return Status::InvalidArgument("COMMIT: unknown op");
  if (payload[1] > 2) {
    return Status::InvalidArgument("COMMIT: unknown condition");
  }
  if (payload[2] & ~kCommitReplica) {
    return Status::InvalidArgument("COMMIT: unknown flags");
  }
  if ((payload[2] & kCommitReplica) && payload[1] != 0) {
    return Status::InvalidArgument("COMMIT: a replica record has no condition");
  }
  out->op = payload[0];
  out->condition = payload[1];
  out->flags = payload[2];
  out->segment = Get32(payload, 4);
  out->grant_id = Get64(payload, 8);
  out->offset = Get64(payload, 16);
  out->length = Get32(payload, 24);
  out->key_hash = Get64(payload, 32);
  out->expected_sequence = Get64(payload, 40);
  return Status::Ok();
}

// COMMIT_ACK payload, 40 bytes + message:
//   0 1 status (kv::StatusCode)   1 1 flags (1 had_previous)   2 2 reserved
//   4 4 length (the committed record's)   8 8 sequence (the new version)
//   16 8 previous_sequence   24 8 log_offset (the record's, in the log)
//   32 8 reserved   40 .. message (text, the rest of the payload)
inline constexpr size_t kCommitAckSize = 40;
inline constexpr uint8_t kAckHadPrevious = 1;
// A replica COMMIT that changed nothing: the key's version there was as
// new or newer (store CommitResult::stale).
inline constexpr uint8_t kAckStale = 2;
struct CommitAck {
  StatusCode status = StatusCode::kOk;
  uint8_t flags = 0;
  uint32_t length = 0;
  uint64_t sequence = 0;
  uint64_t previous_sequence = 0;
  uint64_t log_offset = 0;
  std::string message;
};

inline constexpr uint8_t kMaxStatusCode =
    static_cast<uint8_t>(StatusCode::kWrongShard);

// A status byte from the peer. A code this side does not know (a newer
// peer's) is no protocol error: the request it answers failed, with an
// outcome this side cannot judge, so it becomes `unavailable` and the
// message says so; the connection stays up (docs/protocol.md, "Status
// codes"). `message` gets that explanation prefixed for unknown codes.
inline StatusCode StatusFromWire(uint8_t b, std::string* message) {
  if (b <= kMaxStatusCode) return static_cast<StatusCode>(b);
  const std::string why = "the server answered status " + std::to_string(b) +
                          ", which this client does not know (a newer "
                          "server?): the request's outcome is unknown";
  *message = message->empty() ? why : why + " (" + *message + ")";
  return StatusCode::kUnavailable;
}

// Encodes into payload[0, cap); the message is cut to fit. Returns bytes.
inline size_t EncodeCommitAck(const CommitAck& a, uint8_t* payload,
                              size_t cap) {
  std::memset(payload, 0, kCommitAckSize);
  Put8(payload, 0, static_cast<uint8_t>(a.status));
  Put8(payload, 1, a.flags);
  Put32(payload, 4, a.length);
  Put64(payload, 8, a.sequence);
  Put64(payload, 16, a.previous_sequence);
  Put64(payload, 24, a.log_offset);
  const size_t n = a.message.size() < cap - kCommitAckSize
                       ? a.message.size()
                       : cap - kCommitAckSize;
  std::memcpy(payload + kCommitAckSize, a.message.data(), n);
  return kCommitAckSize + n;
}

inline Status DecodeCommitAck(const uint8_t* payload, size_t len,
                              CommitAck* out) {
  if (len < kCommitAckSize) {
    return Status::Corruption("COMMIT_ACK truncated");
  }
  out->flags = payload[1];
  out->length = Get32(payload, 4);
  out->sequence = Get64(payload, 8);
  out->previous_sequence = Get64(payload, 16);
  out->log_offset = Get64(payload, 24);
  out->message.assign(reinterpret_cast<const char*>(payload + kCommitAckSize),
                      len - kCommitAckSize);
  out->status = StatusFromWire(payload[0], &out->message);
  return Status::Ok();
}

// REFILL payload, 1 byte: flags (bit 0: the record waiting for room is a
// tombstone, so the server may grant its reserve segment — a full
// keyspace still takes deletes). REFILL_ACK payload, 56 bytes + message:
//   0 1 status (kv::StatusCode)   1 3 reserved   4 4 segment   8 4 size
//   12 4 reserved   16 8 grant_id   24 8 start   32 21 write descriptor
//   53 1 grant flags   54 2 reserved   56 .. message (text)
inline constexpr size_t kRefillSize = 1;
inline constexpr uint8_t kRefillForDelete = 1;
inline constexpr size_t kRefillAckSize = 56;
struct RefillAck {
  StatusCode status = StatusCode::kOk;
  Grant grant;
  std::string message;
};

inline size_t EncodeRefillAck(const RefillAck& a, uint8_t* payload,
                              size_t cap) {
  std::memset(payload, 0, kRefillAckSize);
  Put8(payload, 0, static_cast<uint8_t>(a.status));
  Put32(payload, 4, a.grant.segment);
  Put32(payload, 8, a.grant.size);
  Put64(payload, 16, a.grant.grant_id);
  Put64(payload, 24, a.grant.start);
  std::memcpy(payload + 32, a.grant.write_desc, kDescriptorSize);
  Put8(payload, 53, a.grant.flags);
  const size_t n = a.message.size() < cap - kRefillAckSize
                       ? a.message.size()
                       : cap - kRefillAckSize;
  std::memcpy(payload + kRefillAckSize, a.message.data(), n);
  return kRefillAckSize + n;
}

inline Status DecodeRefillAck(const uint8_t* payload, size_t len,
                              uint32_t segment_size, RefillAck* out) {
  if (len < kRefillAckSize) return Status::Corruption("REFILL_ACK truncated");
  out->grant.segment = Get32(payload, 4);
  out->grant.size = Get32(payload, 8);
  out->grant.grant_id = Get64(payload, 16);
  out->grant.start = Get64(payload, 24);
  std::memcpy(out->grant.write_desc, payload + 32, kDescriptorSize);
  out->grant.flags = payload[53];
  out->message.assign(reinterpret_cast<const char*>(payload + kRefillAckSize),
                      len - kRefillAckSize);
  out->status = StatusFromWire(payload[0], &out->message);
  if (out->status == StatusCode::kOk &&
      (out->grant.size != segment_size || out->grant.start > segment_size)) {
    return Status::Corruption("REFILL_ACK: grant outside its segment");
  }
  return Status::Ok();
}

// INFO payload, 1 byte: what. INFO_ACK payload: 1 byte status, then text
// (stats: one "name value" pair per line; keyspaces: one name per line).
// ERROR payload: 1 byte status, then text.
enum class InfoTopic : uint8_t {
  kStats = 0,
  kKeyspaces = 1,
  kServer = 2,
  kPing = 3,  // empty text
  kMax = kPing,
};

inline constexpr size_t kInfoSize = 1;
inline size_t EncodeInfo(InfoTopic topic, uint8_t* payload) {
  Put8(payload, 0, static_cast<uint8_t>(topic));
  return kInfoSize;
}
inline Status DecodeInfo(const uint8_t* payload, size_t len, InfoTopic* out) {
  if (len < kInfoSize) return Status::InvalidArgument("INFO truncated");
  if (payload[0] > static_cast<uint8_t>(InfoTopic::kMax)) {
    return Status::InvalidArgument("INFO: unknown topic " +
                                   std::to_string(payload[0]));
  }
  *out = static_cast<InfoTopic>(payload[0]);
  return Status::Ok();
}

// The text of the INFO_ACK to a kPing: "server_time_ms N\n", N the
// server's clock (Unix ms, kv/server_clock.h) when it built the reply.
// Clients estimate the server's clock from it (docs/protocol.md, "Server
// clock").
inline std::string PingText(uint64_t now_ms) {
  return "server_time_ms " + std::to_string(now_ms) + "\n";
}
// Reads the server's clock out of a ping reply's text. corruption when it
// is not PingText's form (1..20 digits, non-zero).
inline Status ParsePingText(std::string_view text, uint64_t* now_ms) {
  constexpr std::string_view kName = "server_time_ms ";
  if (text.substr(0, kName.size()) != kName) {
    return Status::Corruption("ping reply carries no server_time_ms");
  }
  text.remove_prefix(kName.size());
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (text.empty() || text.size() > 19) {
    return Status::Corruption("ping reply: bad server_time_ms");
  }
  uint64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') {
      return Status::Corruption("ping reply: bad server_time_ms");
    }
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (v == 0) return Status::Corruption("ping reply: server_time_ms 0");
  *now_ms = v;
  return Status::Ok();
}

// INFO_ACK and ERROR payloads: 1 byte status (kv::StatusCode), then text.
// Encodes into payload[0, cap) (cap >= 1); the text is cut to fit.
inline size_t EncodeStatusText(StatusCode status, std::string_view text,
                               uint8_t* payload, size_t cap) {
  Put8(payload, 0, static_cast<uint8_t>(status));
  const size_t n = text.size() < cap - 1 ? text.size() : cap - 1;
  std::memcpy(payload + 1, text.data(), n);
  return 1 + n;
}
inline Status DecodeStatusText(const uint8_t* payload, size_t len,
                               StatusCode* status, std::string* text) {
  if (len < 1) return Status::Corruption("status payload truncated");
  text->assign(reinterpret_cast<const char*>(payload + 1), len - 1);
  *status = StatusFromWire(payload[0], text);
  return Status::Ok();
}

// A whole message (header + payload) into out[0, kMaxMessage): returns its
// size, or 0 when the payload does not fit.
inline size_t EncodeMessage(const Header& h, const void* payload,
                            size_t payload_len, uint8_t* out) {
  if (payload_len > kMaxMessage - kHeaderSize) return 0;
  Header copy = h;
  copy.length = static_cast<uint32_t>(payload_len);
  EncodeHeader(copy, out);
  if (payload_len != 0) std::memcpy(out + kHeaderSize, payload, payload_len);
  return kHeaderSize + payload_len;
}

}  // namespace kv::protocol

#endif  // KV_PROTOCOL_H_
