// kvserver against COMMITs with hostile numbers: offsets that wrap, ops
// that contradict their record. Each must be refused, change nothing a
// client was acknowledged, leak no byte from outside the grant, and leave
// the server serving.
#include <limits>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

class ServerCommitBoundsTest : public ServerTest {
 protected:
  // The connection's grant: the accept's, or (no grant at admission) a
  // REFILL's.
  protocol::Grant GrantOf(RawClient* c, const protocol::Accept& a) {
    if (a.grant.size != 0) return a.grant;
    protocol::RefillAck ack;
    EXPECT_TRUE(c->SendMessage(protocol::Type::kRefill, "", 3).ok());
    protocol::Header h;
    std::string payload;
    EXPECT_TRUE(c->ReceiveMessage(&h, &payload).ok());
    EXPECT_TRUE(protocol::DecodeRefillAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), a.segment_size, &ack)
                    .ok());
    EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
    return ack.grant;
  }
  // A fresh client puts and reads back through the raw protocol.
  void ExpectServing() {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, "default", &a);
    protocol::Grant g = GrantOf(&c, a);
    protocol::CommitAck ack;
    ASSERT_TRUE(PutRaw(&c, a, g, g.start, "still", "serving", &ack).ok());
    EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  }
};

// Over the wire, segment 0: offset 2^64 - d made the server verify bytes
// below the log (up to 3 MiB below the mapping) and echo them in the
// error text ("key length 19535" was the superblock's magic).
TEST_F(ServerCommitBoundsTest, WrappingOffsetIsRefusedWithoutReadingOutside) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  protocol::Grant g = GrantOf(&c, a);
  const uint64_t cases[][2] = {
      {64, 64}, {64, 128}, {4096, 4096}, {1 << 20, 1 << 20}};
  for (const auto& [back, length] : cases) {
    protocol::Commit cm;
    cm.segment = g.segment;
    cm.grant_id = g.grant_id;
    cm.offset = kMax - back + 1;
    cm.length = static_cast<uint32_t>(length);
    protocol::CommitAck ack = Commit(&c, cm);
    EXPECT_EQ(ack.status, StatusCode::kInvalidArgument)
        << back << ": " << ack.message;
    EXPECT_EQ(ack.message.find("record:"), std::string::npos)
        << "the server read a record outside the grant: " << ack.message;
  }
  // The connection's own grant still works from its start.
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, g, g.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  ExpectServing();
}

// Client B names its own grant with an offset that wraps to the last
// record of A's segment (written, never committed by A).
TEST_F(ServerCommitBoundsTest, NoClientCommitsAnotherClientsRecord) {
  StartServer();
  RawClient c1, c2;
  protocol::Accept a1, a2;
  ConnectOk(&c1, "default", &a1);
  protocol::Grant g1 = GrantOf(&c1, a1);
  ConnectOk(&c2, "default", &a2);
  protocol::Grant g2 = GrantOf(&c2, a2);
  // A is the client whose segment comes first (grants take the highest
  // free segment: that is usually the first client's).
  const bool first_is_a = g1.segment + 1 == g2.segment;
  RawClient& ca = first_is_a ? c1 : c2;
  RawClient& cb = first_is_a ? c2 : c1;
  const protocol::Accept& a = first_is_a ? a1 : a2;
  const protocol::Accept& b = first_is_a ? a2 : a1;
  const protocol::Grant& ga = first_is_a ? g1 : g2;
  const protocol::Grant& gb = first_is_a ? g2 : g1;
  ASSERT_EQ(gb.segment, ga.segment + 1) << "the test needs adjacent grants";
  const std::string rec =
      EncodeTestRecord(a.keyspace_id, "victim", std::string(90, 'v'));
  ASSERT_EQ(rec.size(), 128u);
  const uint64_t at = ga.size - rec.size();  // ends at the boundary
  ASSERT_TRUE(ca.Write(ga.write_desc, at - ga.start, rec).ok());
  protocol::Commit forged;
  forged.segment = gb.segment;
  forged.grant_id = gb.grant_id;
  forged.offset = kMax - rec.size() + 1;
  forged.length = static_cast<uint32_t>(rec.size());
  forged.key_hash = index_format::HashKey("victim");
  protocol::CommitAck ack = Commit(&cb, forged);
  EXPECT_EQ(ack.status, StatusCode::kInvalidArgument) << ack.message;
  // A's own commit of its record goes through.
  protocol::Commit own = forged;
  own.segment = ga.segment;
  own.grant_id = ga.grant_id;
  own.offset = at;
  ack = Commit(&ca, own);
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  // And B's grant is intact from its start.
  ASSERT_TRUE(PutRaw(&cb, b, gb, gb.start, "b", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
}

// The op is checked against the record in both directions, over the wire.
TEST_F(ServerCommitBoundsTest, OpContradictingTheRecordIsRefusedBothWays) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  protocol::Grant g = GrantOf(&c, a);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, g, g.start, "k", "v1", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk);
  const uint64_t v1 = ack.sequence;
  uint64_t tail = g.start + record_format::RecordSize(1, 2);
  for (bool tombstone : {true, false}) {
    const std::string rec =
        EncodeTestRecord(a.keyspace_id, "k", tombstone ? "" : "v2", tombstone);
    ASSERT_TRUE(c.Write(g.write_desc, tail - g.start, rec).ok());
    protocol::Commit cm;
    cm.op = tombstone ? 0 : 1;  // the wrong one
    cm.segment = g.segment;
    cm.grant_id = g.grant_id;
    cm.offset = tail;
    cm.length = static_cast<uint32_t>(rec.size());
    cm.key_hash = index_format::HashKey("k");
    ack = Commit(&c, cm);
    EXPECT_EQ(ack.status, StatusCode::kInvalidArgument)
        << (tombstone ? "tombstone as put: " : "put as delete: ")
        << ack.message;
    tail += rec.size();
  }
  // k is still at v1: a commit conditioned on v1's version goes through.
  const std::string rec = EncodeTestRecord(a.keyspace_id, "k", "v3");
  ASSERT_TRUE(c.Write(g.write_desc, tail - g.start, rec).ok());
  protocol::Commit cm;
  cm.condition = 2;  // if version
  cm.expected_sequence = v1;
  cm.segment = g.segment;
  cm.grant_id = g.grant_id;
  cm.offset = tail;
  cm.length = static_cast<uint32_t>(rec.size());
  cm.key_hash = index_format::HashKey("k");
  ack = Commit(&c, cm);
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(ack.previous_sequence, v1);
}

}  // namespace
}  // namespace kv::e2e
