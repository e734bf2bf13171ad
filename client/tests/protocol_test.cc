// The shared wire codec (kv/protocol.h): round trips and every refusal.
#include "kv/protocol.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace kv::protocol {
namespace {

TEST(ProtocolTest, ConnectRoundTripsAndFitsTheCmLimit) {
  Connect c;
  c.flags = kConnectCreate;
  c.map_epoch = 7;
  c.name = std::string(40, 'n');
  uint8_t buf[kConnectSize];
  const size_t n = EncodeConnect(c, buf);
  EXPECT_LE(n, kMaxConnectPdata);
  Connect d;
  ASSERT_TRUE(DecodeConnect(buf, n, &d).ok());
  EXPECT_EQ(d.flags, c.flags);
  EXPECT_EQ(d.map_epoch, 7u);
  EXPECT_EQ(d.name, c.name);
  // Zero padding to 56 bytes (as a NIC delivers it) changes nothing.
  uint8_t padded[kMaxConnectPdata] = {};
  std::memcpy(padded, buf, n);
  ASSERT_TRUE(DecodeConnect(padded, sizeof(padded), &d).ok());
  EXPECT_EQ(d.name, c.name);
}

TEST(ProtocolTest, ConnectRefusesEveryMalformation) {
  Connect c;
  c.name = "ks";
  uint8_t good[kConnectSize];
  EncodeConnect(c, good);
  Connect d;
  EXPECT_FALSE(DecodeConnect(nullptr, 0, &d).ok());
  EXPECT_FALSE(DecodeConnect(good, kConnectHeader - 1, &d).ok());
  EXPECT_FALSE(DecodeConnect(good, kConnectHeader + 1, &d).ok());  // name cut
  auto with = [&](size_t off, uint8_t v) {
    std::vector<uint8_t> b(good, good + kConnectSize);
    b[off] = v;
    return DecodeConnect(b.data(), b.size(), &d);
  };
  EXPECT_NE(with(0, 0).message().find("magic"), std::string::npos);
  EXPECT_NE(with(4, 9).message().find("version"), std::string::npos);
  EXPECT_NE(with(5, 0x80).message().find("flags"), std::string::npos);
  EXPECT_FALSE(with(6, 41).ok());  // name longer than inline
  EXPECT_FALSE(with(6, 0).ok());   // no name, no HELLO
  EXPECT_TRUE(with(6, 0).IsInvalidArgument());
  EXPECT_FALSE(with(kConnectHeader, '!').ok());  // bad name byte
  EXPECT_TRUE(with(5, kConnectHello).ok());      // HELLO: name comes later
}

TEST(ProtocolTest, AcceptRoundTripsAndChecksGeometry) {
  Accept a;
  a.keyspace_id = 3;
  a.bucket_count = 1024;
  a.segment_size = 65536;
  a.log_size = 65536 * 10;
  a.max_value_size = 1000;
  a.index_offset = 0;
  a.log_offset = 4096;
  a.grant.segment = 2;
  a.grant.size = 65536;
  a.grant.start = 128;
  a.grant.grant_id = 99;
  a.max_inflight = 32;
  a.reason = "fine";
  for (size_t i = 0; i < kDescriptorSize; i++) {
    a.read_desc[i] = static_cast<uint8_t>(i);
    a.grant.write_desc[i] = static_cast<uint8_t>(100 + i);
  }
  uint8_t buf[kAcceptSize];
  ASSERT_LE(EncodeAccept(a, buf), kMaxAcceptPdata);
  Accept b;
  ASSERT_TRUE(DecodeAccept(buf, sizeof(buf), &b).ok());
  EXPECT_EQ(b.grant.grant_id, 99u);
  EXPECT_EQ(b.grant.start, 128u);
  EXPECT_EQ(b.reason, "fine");
  EXPECT_EQ(0, std::memcmp(b.read_desc, a.read_desc, kDescriptorSize));
  EXPECT_EQ(
      0, std::memcmp(b.grant.write_desc, a.grant.write_desc, kDescriptorSize));
  EXPECT_FALSE(DecodeAccept(buf, kAcceptSize - 1, &b).ok());
  a.bucket_count = 1000;  // not a power of two
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).IsCorruption());
  a.bucket_count = 1024;
  a.grant.start = 70000;  // outside its segment
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).IsCorruption());
  a.grant.start = 128;
  // Sizes a client derives from the geometry must not overflow.
  a.bucket_count = uint64_t{1} << 41;
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).IsCorruption());
  a.bucket_count = 1024;
  a.max_value_size = 0xffffffffu;
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).IsCorruption());
  a.max_value_size = 1000;
  a.log_size = uint64_t{65536} << 30;  // 64 TiB, above the 256 GiB limit
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).IsCorruption());
  a.log_size = 65536 * 10;
  EncodeAccept(a, buf);
  EXPECT_TRUE(DecodeAccept(buf, sizeof(buf), &b).ok());
  // A refusal needs no geometry; its reason is cut to fit.
  Accept r;
  r.admit = Admit::kUnknownKeyspace;
  r.reason = std::string(500, 'r');
  EncodeAccept(r, buf);
  ASSERT_TRUE(DecodeAccept(buf, sizeof(buf), &b).ok());
  EXPECT_EQ(b.admit, Admit::kUnknownKeyspace);
  EXPECT_EQ(b.reason.size(), kReasonMax - 1);
  buf[5] = 200;  // unknown admission status
  EXPECT_FALSE(DecodeAccept(buf, sizeof(buf), &b).ok());
}

TEST(ProtocolTest, MessagesRoundTripAndRefuseBadHeaders) {
  uint8_t msg[kMaxMessage] = {};
  Commit c;
  c.op = 1;
  c.condition = 2;
  c.segment = 5;
  c.grant_id = 6;
  c.offset = 640;
  c.length = 128;
  c.key_hash = 0x1234;
  c.expected_sequence = 77;
  const size_t n = EncodeCommit(c, msg + kHeaderSize);
  EncodeHeader({Type::kCommit, 42, static_cast<uint32_t>(n), 0}, msg);
  Header h;
  ASSERT_TRUE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  EXPECT_EQ(h.type, Type::kCommit);
  EXPECT_EQ(h.request_id, 42u);
  Commit d;
  ASSERT_TRUE(DecodeCommit(msg + kHeaderSize, h.length, &d).ok());
  EXPECT_EQ(d.expected_sequence, 77u);
  EXPECT_EQ(d.offset, 640u);
  // Payload length beyond what arrived, unknown type, bad magic/version.
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n - 1, &h).ok());
  msg[3] = 0;
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  msg[3] = 200;
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  msg[3] = static_cast<uint8_t>(Type::kCommit);
  msg[2] = kVersion + 1;
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  msg[2] = kVersion - 1;
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  msg[2] = kVersion;
  msg[0] ^= 1;
  EXPECT_FALSE(DecodeHeader(msg, kHeaderSize + n, &h).ok());
  // Commit fields out of range.
  uint8_t bad[kCommitSize] = {};
  bad[0] = 2;
  EXPECT_FALSE(DecodeCommit(bad, sizeof(bad), &d).ok());
  bad[0] = 0;
  bad[1] = 3;
  EXPECT_FALSE(DecodeCommit(bad, sizeof(bad), &d).ok());
  EXPECT_FALSE(DecodeCommit(bad, kCommitSize - 1, &d).ok());
}

TEST(ProtocolTest, AcksAndHelloRoundTrip) {
  uint8_t p[kMaxMessage - kHeaderSize];
  CommitAck a;
  a.status = StatusCode::kConditionFailed;
  a.flags = kAckHadPrevious;
  a.sequence = 9;
  a.log_offset = 4096;
  a.length = 64;
  a.message = "expected version 3";
  const size_t n = EncodeCommitAck(a, p, sizeof(p));
  CommitAck b;
  ASSERT_TRUE(DecodeCommitAck(p, n, &b).ok());
  EXPECT_EQ(b.status, StatusCode::kConditionFailed);
  EXPECT_EQ(b.message, a.message);
  Hello h;
  h.flags = kConnectCreate;
  h.name = std::string(63, 'x');
  h.access_key = std::string(64, 'k');
  const size_t hn = EncodeHello(h, p);
  Hello g;
  ASSERT_TRUE(DecodeHello(p, hn, &g).ok());
  EXPECT_EQ(g.name, h.name);
  EXPECT_EQ(g.access_key, h.access_key);
  EXPECT_FALSE(DecodeHello(p, hn - 1, &g).ok());
  p[1] = 64;  // name too long
  EXPECT_FALSE(DecodeHello(p, hn, &g).ok());
  RefillAck r;
  r.grant.size = 65536;
  r.grant.start = 0;
  const size_t rn = EncodeRefillAck(r, p, sizeof(p));
  RefillAck s;
  ASSERT_TRUE(DecodeRefillAck(p, rn, 65536, &s).ok());
  EXPECT_TRUE(DecodeRefillAck(p, rn, 4096, &s).IsCorruption());
}

// docs/protocol.md, "Status codes": wrong_shard is on the wire as 11, and a
// code past the last one this side knows is a failed request of unknown
// outcome (unavailable, explained), never a decoding error.
TEST(ProtocolTest, WrongShardIsElevenAndUnknownCodesAreUnavailable) {
  EXPECT_EQ(static_cast<int>(StatusCode::kWrongShard), 11);
  EXPECT_EQ(kMaxStatusCode, 11);
  EXPECT_EQ(StatusCodeName(StatusCode::kWrongShard), "wrong_shard");
  uint8_t p[kMaxMessage - kHeaderSize];
  CommitAck a;
  a.status = StatusCode::kWrongShard;
  a.message = "epoch 7";
  size_t n = EncodeCommitAck(a, p, sizeof(p));
  CommitAck b;
  ASSERT_TRUE(DecodeCommitAck(p, n, &b).ok());
  EXPECT_EQ(b.status, StatusCode::kWrongShard);
  EXPECT_EQ(b.message, "epoch 7");
  for (int code : {12, 99, 255}) {
    p[0] = static_cast<uint8_t>(code);
    ASSERT_TRUE(DecodeCommitAck(p, n, &b).ok()) << code;
    EXPECT_EQ(b.status, StatusCode::kUnavailable) << code;
    EXPECT_NE(b.message.find("status " + std::to_string(code) +
                             ", which this client does not know"),
              std::string::npos)
        << b.message;
    EXPECT_NE(b.message.find("(epoch 7)"), std::string::npos) << b.message;
  }
  RefillAck r;
  r.grant.size = 65536;
  n = EncodeRefillAck(r, p, sizeof(p));
  p[0] = 200;
  RefillAck s;
  ASSERT_TRUE(DecodeRefillAck(p, n, 4096, &s).ok());  // no grant checked
  EXPECT_EQ(s.status, StatusCode::kUnavailable);
  n = EncodeStatusText(StatusCode::kOk, "", p, sizeof(p));
  p[0] = 12;
  StatusCode code = StatusCode::kOk;
  std::string text;
  ASSERT_TRUE(DecodeStatusText(p, n, &code, &text).ok());
  EXPECT_EQ(code, StatusCode::kUnavailable);
  EXPECT_NE(text.find("status 12"), std::string::npos) << text;
}

}  // namespace
}  // namespace kv::protocol
