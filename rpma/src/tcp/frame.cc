// Wire format encoding and validation; see frame.h.
#include "tcp/frame.h"

namespace rpma::prov::tcp {
namespace {

uint64_t Load(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void Store(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Payload limit per frame type; -1 for an unknown type.
int64_t MaxPayload(uint8_t type) {
  switch (type) {
    case kFrameHello:
    case kFrameAccept:
      return kMaxPrivateData;
    case kFrameHelloAck:
    case kFrameReject:
    case kFrameDisconnect:
    case kFrameRead:
    case kFrameAtomicWrite:
    case kFrameFlush:
      return 0;
    case kFrameWrite:
    case kFrameWriteImm:
    case kFrameSend:
    case kFrameSendImm:
    case kFrameResp:
      return kMaxIoLength;
    default:
      return -1;
  }
}

}  // namespace

ParseResult ParseHeader(const uint8_t* buf, size_t len, FrameHeader* out,
                        const char** why) {
  if (len < kHeaderSize) return ParseResult::kNeedMore;
  FrameHeader h;
  h.type = buf[0];
  h.flags = buf[1];
  uint64_t reserved = Load(buf + 2, 2);
  h.length = static_cast<uint32_t>(Load(buf + 4, 4));
  h.addr = Load(buf + 8, 8);
  h.rkey = static_cast<uint32_t>(Load(buf + 16, 4));
  h.imm = static_cast<uint32_t>(Load(buf + 20, 4));
  h.value = Load(buf + 24, 8);

  int64_t max = MaxPayload(h.type);
  if (max < 0) {
    *why = "unknown frame type";
    return ParseResult::kBad;
  }
  if (reserved != 0) {
    *why = "reserved header bits set";
    return ParseResult::kBad;
  }
  if (h.flags != 0 &&
      !(h.type == kFrameFlush && h.flags == kFlagFlushVisibility)) {
    *why = "unknown frame flags";
    return ParseResult::kBad;
  }
  if (static_cast<int64_t>(h.length) > max) {
    *why = "frame payload too long";
    return ParseResult::kBad;
  }
  if (h.type == kFrameRead && h.value > kMaxIoLength) {
    *why = "read length too long";
    return ParseResult::kBad;
  }
  if (h.type == kFrameResp && h.value > kRespMax) {
    *why = "unknown response status";
    return ParseResult::kBad;
  }
  if (h.type == kFrameResp && h.value != kRespOk && h.length != 0) {
    *why = "error response with payload";
    return ParseResult::kBad;
  }
  if (h.type == kFrameHello &&
      (h.addr != kHelloMagic || h.value != kProtocolVersion)) {
    *why = "bad hello magic or unsupported protocol version";
    return ParseResult::kBad;
  }
  *out = h;
  return ParseResult::kOk;
}

void EncodeHeader(const FrameHeader& h, uint8_t* out) {
  out[0] = h.type;
  out[1] = h.flags;
  Store(out + 2, 0, 2);
  Store(out + 4, h.length, 4);
  Store(out + 8, h.addr, 8);
  Store(out + 16, h.rkey, 4);
  Store(out + 20, h.imm, 4);
  Store(out + 24, h.value, 8);
}

long CountFrames(const uint8_t* buf, size_t len) {
  long frames = 0;
  size_t off = 0;
  while (off < len) {
    FrameHeader h;
    const char* why = nullptr;
    ParseResult r = ParseHeader(buf + off, len - off, &h, &why);
    if (r == ParseResult::kBad) return -1;
    if (r == ParseResult::kNeedMore) break;
    if (len - off - kHeaderSize < h.length) break;
    off += kHeaderSize + h.length;
    ++frames;
  }
  return frames;
}

}  // namespace rpma::prov::tcp
