// Wire format of the tcp provider (prose twin: docs/tcp_provider.md).
//
// Every frame is a fixed 32-byte little-endian header followed by
// `length` payload bytes. The header is self-describing enough that a
// receiver can validate it before touching any payload: the parser below
// is pure (no I/O, no state) so it can be fuzzed on its own.
//
//   off size field
//     0    1 type      FrameType
//     1    1 flags     kFlag* bits; unknown bits are invalid
//     2    2 reserved  must be 0
//     4    4 length    payload bytes that follow the header
//     8    8 addr      remote virtual address (one-sided ops), magic (HELLO)
//    16    4 rkey      remote key (one-sided ops)
//    20    4 imm       immediate data, opaque (already network order)
//    24    8 value     READ: length; FLUSH: length; ATOMIC_WRITE: data;
//                      RESP: status; HELLO: protocol version
#ifndef RPMA_TCP_FRAME_H_
#define RPMA_TCP_FRAME_H_

#include <cstddef>
#include <cstdint>

namespace rpma::prov::tcp {

inline constexpr size_t kHeaderSize = 32;
inline constexpr uint64_t kHelloMagic = 0x31504354564b5052ull;  // "RPKVTCP1"
// 2: RESP status kRespRnrRetryExceeded.
inline constexpr uint64_t kProtocolVersion = 2;
inline constexpr uint32_t kMaxPrivateData = 255;
// Largest payload of one frame (and largest READ / SEND / WRITE).
inline constexpr uint32_t kMaxIoLength = 1u << 30;

enum FrameType : uint8_t {
  // Connection management.
  kFrameHello = 1,     // active -> passive: magic, version, private data
  kFrameHelloAck = 2,  // passive -> active: a listener got the hello
  kFrameAccept = 3,    // passive -> active: private data
  kFrameReject = 4,    // passive -> active
  kFrameDisconnect = 5,
  // Requests (initiator -> target), executed in order at the target.
  kFrameWrite = 16,
  kFrameWriteImm = 17,
  kFrameRead = 18,
  kFrameAtomicWrite = 19,
  kFrameFlush = 20,
  kFrameSend = 21,
  kFrameSendImm = 22,
  // Exactly one per request, in request order (target -> initiator).
  kFrameResp = 32,
};

enum FrameFlag : uint8_t {
  kFlagFlushVisibility = 1 << 0,  // FLUSH only; clear = persistent
};

// RESP status values.
enum RespStatus : uint64_t {
  kRespOk = 0,
  kRespRemoteAccess = 1,      // rkey, bounds or access rights
  kRespRemoteInvalid = 2,     // malformed request (e.g. receive too small)
  kRespRemoteOp = 3,          // the target failed to execute it
  kRespRnrRetryExceeded = 4,  // no receive in time (IBV_WC_RNR_RETRY_EXC_ERR)
  kRespMax = 4,
};

struct FrameHeader {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t length = 0;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint64_t value = 0;
};

enum class ParseResult { kOk, kNeedMore, kBad };

// Parses and validates one header from buf[0, len). kNeedMore if fewer
// than kHeaderSize bytes; kBad (with *why set to a static string) for an
// unknown type, non-zero reserved bits, unknown flags or a length out of
// the type's limits. *out is written only on kOk.
ParseResult ParseHeader(const uint8_t* buf, size_t len, FrameHeader* out,
                        const char** why);

// Encodes h into out[0, kHeaderSize).
void EncodeHeader(const FrameHeader& h, uint8_t* out);

// Walks a byte stream frame by frame (headers validated, payloads
// skipped); returns the number of complete frames, or -1 at the first
// invalid header. Used by the fuzzer and tests.
long CountFrames(const uint8_t* buf, size_t len);

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_FRAME_H_
