// The frame parser of the tcp provider: round trips and every rejection.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tcp/frame.h"

namespace rpma::prov::tcp {
namespace {

std::vector<uint8_t> Encode(const FrameHeader& h) {
  std::vector<uint8_t> b(kHeaderSize);
  EncodeHeader(h, b.data());
  return b;
}

ParseResult Parse(const std::vector<uint8_t>& b, FrameHeader* h) {
  const char* why = nullptr;
  return ParseHeader(b.data(), b.size(), h, &why);
}

TEST(TcpFrameTest, RoundTripIsLittleEndian) {
  FrameHeader h;
  h.type = kFrameWrite;
  h.length = 0x01020304;
  h.addr = 0x1122334455667788ull;
  h.rkey = 0xa1b2c3d4;
  h.imm = 0x0badf00d;
  h.value = 0;
  auto b = Encode(h);
  EXPECT_EQ(b[4], 0x04);
  EXPECT_EQ(b[8], 0x88);
  EXPECT_EQ(b[16], 0xd4);
  FrameHeader o;
  ASSERT_EQ(Parse(b, &o), ParseResult::kOk);
  EXPECT_EQ(o.type, h.type);
  EXPECT_EQ(o.length, h.length);
  EXPECT_EQ(o.addr, h.addr);
  EXPECT_EQ(o.rkey, h.rkey);
  EXPECT_EQ(o.imm, h.imm);
}

TEST(TcpFrameTest, ShortInputNeedsMore) {
  FrameHeader h;
  h.type = kFrameRead;
  auto b = Encode(h);
  b.resize(kHeaderSize - 1);
  FrameHeader o;
  EXPECT_EQ(Parse(b, &o), ParseResult::kNeedMore);
}

TEST(TcpFrameTest, RejectsUnknownTypeReservedBitsAndFlags) {
  FrameHeader h;
  h.type = 99;
  FrameHeader o;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.type = kFrameRead;
  auto b = Encode(h);
  b[2] = 1;
  EXPECT_EQ(Parse(b, &o), ParseResult::kBad);
  h.flags = kFlagFlushVisibility;  // only valid on FLUSH
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.type = kFrameFlush;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kOk);
  h.flags = 0x80;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
}

TEST(TcpFrameTest, RejectsOversizedPayloads) {
  FrameHeader h;
  FrameHeader o;
  h.type = kFrameAccept;
  h.length = kMaxPrivateData + 1;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.type = kFrameWrite;
  h.length = kMaxIoLength + 1;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.type = kFrameRead;
  h.length = 1;  // a read carries no payload
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.length = 0;
  h.value = uint64_t{kMaxIoLength} + 1;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
}

TEST(TcpFrameTest, RejectsBadHelloAndResponses) {
  FrameHeader h;
  FrameHeader o;
  h.type = kFrameHello;
  h.addr = kHelloMagic;
  h.value = kProtocolVersion;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kOk);
  h.value = kProtocolVersion + 1;
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  h.value = kProtocolVersion;
  h.addr = 0x4745542f20485454ull;  // "TTH /TEG": an HTTP client
  EXPECT_EQ(Parse(Encode(h), &o), ParseResult::kBad);
  FrameHeader r;
  r.type = kFrameResp;
  r.value = kRespMax + 1;
  EXPECT_EQ(Parse(Encode(r), &o), ParseResult::kBad);
  r.value = kRespRemoteAccess;
  r.length = 8;  // an error carries no data
  EXPECT_EQ(Parse(Encode(r), &o), ParseResult::kBad);
}

TEST(TcpFrameTest, CountFramesWalksPayloads) {
  FrameHeader a;
  a.type = kFrameSend;
  a.length = 5;
  std::vector<uint8_t> s = Encode(a);
  s.insert(s.end(), {1, 2, 3, 4, 5});
  FrameHeader b;
  b.type = kFrameDisconnect;
  auto eb = Encode(b);
  s.insert(s.end(), eb.begin(), eb.end());
  EXPECT_EQ(CountFrames(s.data(), s.size()), 2);
  EXPECT_EQ(CountFrames(s.data(), s.size() - 1), 1);  // truncated
  s[kHeaderSize + 5] = 200;                           // garbage type
  EXPECT_EQ(CountFrames(s.data(), s.size()), -1);
}

}  // namespace
}  // namespace rpma::prov::tcp
