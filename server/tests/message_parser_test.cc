// ParseClientMessage and the protocol decoders it runs on client bytes
// (DecodeCommit, DecodeHello, DecodeInfo; DecodeConnect through
// Admission::ParseConnect): every bound and every check of a field, on a
// message inside a larger buffer, so that a decoder reading past what it
// was given decodes plausible bytes instead of failing by accident.
#include "message_parser.h"

#include <gtest/gtest.h>

#include <vector>

#include "admission.h"

namespace kv::server {
namespace {

using Kind = ClientMessage::Kind;

// A message of `type` whose header says `payload_len`, the payload's
// first bytes from `payload`, then ones up to 256 bytes (valid-looking
// fields past the end for a decoder that reads too far).
std::vector<uint8_t> Message(protocol::Type type,
                             const std::vector<uint8_t>& payload,
                             size_t payload_len) {
  std::vector<uint8_t> buf(protocol::kHeaderSize + 256, 1);
  protocol::Header h;
  h.type = type;
  h.request_id = 7;
  h.length = static_cast<uint32_t>(payload_len);
  protocol::EncodeHeader(h, buf.data());
  std::copy(payload.begin(), payload.end(),
            buf.begin() + protocol::kHeaderSize);
  return buf;
}

ClientMessage Parse(const std::vector<uint8_t>& buf, size_t payload_len,
                    bool hello_pending = false) {
  return ParseClientMessage(buf.data(), protocol::kHeaderSize + payload_len,
                            hello_pending);
}

std::vector<uint8_t> CommitPayload(uint8_t op, uint8_t condition) {
  protocol::Commit c;
  c.op = op;
  c.condition = condition;
  c.segment = 3;
  c.grant_id = 9;
  c.length = 64;
  std::vector<uint8_t> p(protocol::kCommitSize);
  protocol::EncodeCommit(c, p.data());
  p[0] = op;
  p[1] = condition;
  return p;
}

std::vector<uint8_t> HelloPayload(const std::string& name,
                                  const std::string& key, uint8_t flags = 0) {
  protocol::Hello h;
  h.name = name;
  h.access_key = key;
  h.flags = flags;
  std::vector<uint8_t> p(protocol::kHelloSize);
  protocol::EncodeHello(h, p.data());
  return p;
}

TEST(MessageParserTest, CommitIsDecodedOnlyWhole) {
  const auto good = Message(protocol::Type::kCommit, CommitPayload(1, 2),
                            protocol::kCommitSize);
  ClientMessage m = Parse(good, protocol::kCommitSize);
  ASSERT_EQ(m.kind, Kind::kCommit) << m.error;
  EXPECT_EQ(m.commit.op, 1);
  EXPECT_EQ(m.commit.condition, 2);
  EXPECT_EQ(m.commit.segment, 3u);
  EXPECT_EQ(m.commit.grant_id, 9u);
  // One byte short, or only the first fields: a protocol error.
  for (size_t len :
       {size_t{0}, size_t{8}, size_t{24}, protocol::kCommitSize - 1}) {
    const auto short_commit =
        Message(protocol::Type::kCommit, CommitPayload(0, 0), len);
    m = Parse(short_commit, len);
    EXPECT_EQ(m.kind, Kind::kError) << len;
    EXPECT_NE(m.error.find("truncated"), std::string::npos) << m.error;
  }
}

TEST(MessageParserTest, CommitWithUnknownOpOrConditionIsAnError) {
  for (uint8_t op : {2, 3, 255}) {
    const auto buf = Message(protocol::Type::kCommit, CommitPayload(op, 0),
                             protocol::kCommitSize);
    EXPECT_EQ(Parse(buf, protocol::kCommitSize).kind, Kind::kError) << int{op};
  }
  for (uint8_t cond : {3, 4, 255}) {
    const auto buf = Message(protocol::Type::kCommit, CommitPayload(0, cond),
                             protocol::kCommitSize);
    EXPECT_EQ(Parse(buf, protocol::kCommitSize).kind, Kind::kError)
        << int{cond};
  }
}

TEST(MessageParserTest, ReplicaCommitFlagIsDecodedAndCheckedForm) {
  auto replica = CommitPayload(1, 0);
  replica[2] = protocol::kCommitReplica;
  ClientMessage m =
      Parse(Message(protocol::Type::kCommit, replica, protocol::kCommitSize),
            protocol::kCommitSize);
  ASSERT_EQ(m.kind, Kind::kCommit) << m.error;
  EXPECT_EQ(m.commit.flags, protocol::kCommitReplica);
  EXPECT_EQ(m.commit.op, 1);
  // A plain COMMIT says no flags.
  m = Parse(Message(protocol::Type::kCommit, CommitPayload(0, 2),
                    protocol::kCommitSize),
            protocol::kCommitSize);
  ASSERT_EQ(m.kind, Kind::kCommit) << m.error;
  EXPECT_EQ(m.commit.flags, 0);
  // Unknown flag bits; a replica record with a condition.
  for (uint8_t f : {uint8_t{2}, uint8_t{0x80}}) {
    auto bad = CommitPayload(0, 0);
    bad[2] = f;
    m = Parse(Message(protocol::Type::kCommit, bad, protocol::kCommitSize),
              protocol::kCommitSize);
    EXPECT_EQ(m.kind, Kind::kError) << int{f};
  }
  auto conditional = CommitPayload(0, 1);
  conditional[2] = protocol::kCommitReplica;
  m = Parse(
      Message(protocol::Type::kCommit, conditional, protocol::kCommitSize),
      protocol::kCommitSize);
  EXPECT_EQ(m.kind, Kind::kError);
  EXPECT_NE(m.error.find("no condition"), std::string::npos) << m.error;
}

TEST(MessageParserTest, PeerHelloKeepsItsFlag) {
  const auto hello =
      Message(protocol::Type::kHello,
              HelloPayload("ks.s3", std::string(32, 'p'), protocol::kHelloPeer),
              protocol::kHelloSize);
  ClientMessage m = Parse(hello, protocol::kHelloSize, true);
  ASSERT_EQ(m.kind, Kind::kHello) << m.error;
  EXPECT_EQ(m.hello.flags, protocol::kHelloPeer);
  EXPECT_EQ(m.hello.access_key, std::string(32, 'p'));
}

TEST(MessageParserTest, OnlyHelloBeforeHelloAndHelloOnlyThen) {
  const auto commit = Message(protocol::Type::kCommit, CommitPayload(0, 0),
                              protocol::kCommitSize);
  EXPECT_EQ(Parse(commit, protocol::kCommitSize, true).kind, Kind::kError);
  for (protocol::Type t :
       {protocol::Type::kRefill, protocol::Type::kInfo, protocol::Type::kBye}) {
    const auto buf = Message(t, {0}, 1);
    EXPECT_EQ(Parse(buf, 1, true).kind, Kind::kError) << static_cast<int>(t);
  }
  const auto hello = Message(protocol::Type::kHello, HelloPayload("ks", ""),
                             protocol::kHelloSize);
  ClientMessage m = Parse(hello, protocol::kHelloSize, true);
  ASSERT_EQ(m.kind, Kind::kHello) << m.error;
  EXPECT_EQ(m.hello.name, "ks");
  // An admitted connection (or one that already sent HELLO) may not.
  m = Parse(hello, protocol::kHelloSize, false);
  EXPECT_EQ(m.kind, Kind::kError);
  EXPECT_NE(m.error.find("HELLO only"), std::string::npos) << m.error;
}

TEST(MessageParserTest, BadHelloIsARefusedHello) {
  const std::string key(protocol::kMaxAccessKey, 'k');
  auto hello = HelloPayload("ks", key);
  // Truncated: every shorter length.
  for (size_t len :
       {size_t{0}, size_t{4}, size_t{67}, protocol::kHelloSize - 1}) {
    const auto buf = Message(protocol::Type::kHello, hello, len);
    EXPECT_EQ(Parse(buf, len, true).kind, Kind::kBadHello) << len;
  }
  // Unknown flags (create and peer are the HELLO flags), and a peer that
  // would create.
  for (uint8_t f :
       {protocol::kConnectHello, protocol::kConnectTicket, uint8_t{0x80},
        static_cast<uint8_t>(protocol::kHelloPeer |
                             protocol::kConnectCreate)}) {
    auto p = hello;
    p[0] = f;
    const auto buf = Message(protocol::Type::kHello, p, protocol::kHelloSize);
    EXPECT_EQ(Parse(buf, protocol::kHelloSize, true).kind, Kind::kBadHello)
        << int{f};
  }
  // A key length past the key field (64), a name length past the name's.
  auto long_key = hello;
  long_key[2] = protocol::kMaxAccessKey + 1;
  const auto k =
      Message(protocol::Type::kHello, long_key, protocol::kHelloSize);
  EXPECT_EQ(Parse(k, protocol::kHelloSize, true).kind, Kind::kBadHello);
  auto long_name = hello;
  long_name[1] = kMaxKeyspaceNameSize + 1;
  const auto n =
      Message(protocol::Type::kHello, long_name, protocol::kHelloSize);
  EXPECT_EQ(Parse(n, protocol::kHelloSize, true).kind, Kind::kBadHello);
  // The whole key field is used as sent.
  const auto full =
      Message(protocol::Type::kHello, hello, protocol::kHelloSize);
  ClientMessage m = Parse(full, protocol::kHelloSize, true);
  ASSERT_EQ(m.kind, Kind::kHello) << m.error;
  EXPECT_EQ(m.hello.access_key, key);
}

TEST(MessageParserTest, RefillForDeleteOnlyWithTheFlag) {
  ClientMessage m = Parse(
      Message(protocol::Type::kRefill, {protocol::kRefillForDelete}, 1), 1);
  ASSERT_EQ(m.kind, Kind::kRefill);
  EXPECT_TRUE(m.refill_for_delete);
  m = Parse(Message(protocol::Type::kRefill, {0}, 1), 1);
  ASSERT_EQ(m.kind, Kind::kRefill);
  EXPECT_FALSE(m.refill_for_delete);
  // An older client's empty REFILL (the byte after it is not read).
  m = Parse(Message(protocol::Type::kRefill, {protocol::kRefillForDelete}, 0),
            0);
  ASSERT_EQ(m.kind, Kind::kRefill);
  EXPECT_FALSE(m.refill_for_delete);
}

TEST(MessageParserTest, InfoWithUnknownTopicOrNoneIsAnError) {
  EXPECT_EQ(Parse(Message(protocol::Type::kInfo, {0}, 1), 1).kind, Kind::kInfo);
  EXPECT_EQ(Parse(Message(protocol::Type::kInfo, {4}, 1), 1).kind,
            Kind::kError);
  EXPECT_EQ(Parse(Message(protocol::Type::kInfo, {0}, 0), 0).kind,
            Kind::kError);
}

TEST(MessageParserTest, ServerMessagesAreErrors) {
  for (protocol::Type t : {protocol::Type::kWelcome, protocol::Type::kCommitAck,
                           protocol::Type::kRefillAck, protocol::Type::kInfoAck,
                           protocol::Type::kError}) {
    EXPECT_EQ(Parse(Message(t, {0}, 1), 1).kind, Kind::kError)
        << static_cast<int>(t);
  }
}

// DecodeConnect's checks, through the admission's parser.
bool Admitted(const std::vector<uint8_t>& pd, size_t len) {
  ConnectRequest cr;
  Refusal r;
  return Admission::ParseConnect(pd.data(), len, &cr, &r);
}

std::vector<uint8_t> Connect(const std::string& name, uint8_t flags) {
  protocol::Connect c;
  c.name = name;
  c.flags = flags;
  std::vector<uint8_t> out(protocol::kConnectSize + 64, 'a');
  protocol::EncodeConnect(c, out.data());
  return out;
}

TEST(ConnectDecodeTest, EveryFieldIsChecked) {
  EXPECT_TRUE(Admitted(Connect("default", 0), protocol::kConnectSize));
  // Unknown flags.
  for (uint8_t f : {uint8_t{8}, uint8_t{0x80}}) {
    EXPECT_FALSE(Admitted(Connect("default", f), protocol::kConnectSize))
        << int{f};
  }
  // A name longer than the bytes received (the rest of the buffer would
  // make it "defaultaaa").
  const auto named = Connect("defaultaaa", 0);
  EXPECT_TRUE(Admitted(named, protocol::kConnectHeader + 10));
  EXPECT_FALSE(Admitted(named, protocol::kConnectHeader + 9));
  EXPECT_FALSE(Admitted(named, protocol::kConnectHeader + 7));
  // A ticket is 16 bytes and never comes with HELLO.
  const std::string ticket(protocol::kTicketSize, 'T');
  EXPECT_TRUE(Admitted(Connect(ticket, protocol::kConnectTicket),
                       protocol::kConnectSize));
  EXPECT_FALSE(Admitted(
      Connect(ticket, protocol::kConnectTicket | protocol::kConnectHello),
      protocol::kConnectSize));
  EXPECT_FALSE(Admitted(Connect(ticket + "T", protocol::kConnectTicket),
                        protocol::kConnectSize));
  // An inline name is a keyspace name.
  for (const char* bad : {"", "a b", "a/b", "x\n", "a:b"}) {
    EXPECT_FALSE(Admitted(Connect(bad, 0), protocol::kConnectSize)) << bad;
  }
}

}  // namespace
}  // namespace kv::server
