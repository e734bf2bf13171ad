// kvserver admission: what the connect private data and HELLO decide.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

class ServerAdmissionTest : public ServerTest {};

TEST_F(ServerAdmissionTest, AdmitsDefaultKeyspaceWithGeometryAndGrant) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  EXPECT_EQ(a.segment_size, 1u << 20);
  EXPECT_EQ(a.grant.size, a.segment_size);
  EXPECT_GT(a.bucket_count, 0u);
  EXPECT_GT(a.max_inflight, 0);
  EXPECT_NE(a.session_id, 0u);
  EXPECT_EQ(a.flags & protocol::kAcceptPmem, 0);  // a file pool: page
}

TEST_F(ServerAdmissionTest, CommitsARecordWrittenIntoTheGrant) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  protocol::CommitAck ack;
  Status st = PutRaw(&c, a, a.grant, a.grant.start, "key", "value", &ack);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_NE(ack.sequence, 0u);
  EXPECT_EQ(ack.flags & protocol::kAckHadPrevious, 0);
  // The record is readable through the read region where the ack says.
  std::string rec;
  st = c.Read(a.read_desc, a.log_offset + ack.log_offset, ack.length, &rec);
  ASSERT_TRUE(st.ok()) << st.ToString();
  record_format::RecordView view;
  ASSERT_TRUE(
      record_format::VerifyRecord(rec.data(), rec.size(), a.keyspace_id, &view)
          .ok());
  EXPECT_EQ(view.key, "key");
  EXPECT_EQ(view.value, "value");
  EXPECT_EQ(view.header.sequence, ack.sequence);
}

}  // namespace
}  // namespace kv::e2e

namespace kv::e2e {
namespace {

using protocol::Admit;

// Raw connect private data with one field changed.
std::string Pdata(std::string_view name, uint8_t flags = 0) {
  return ConnectPdata(name, flags);
}

class ServerRefusalTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    StartServer();
  }
  // Connects with `pdata`; expects refusal `want` whose reason contains
  // `reason`, then the server's disconnect; the server keeps serving.
  void ExpectRefused(std::optional<std::string> pdata, Admit want,
                     const std::string& reason) {
    RawClient c;
    protocol::Accept a = ConnectRaw(&c, std::move(pdata));
    EXPECT_EQ(a.admit, want)
        << protocol::AdmitName(a.admit) << ": " << a.reason;
    EXPECT_NE(a.reason.find(reason), std::string::npos) << a.reason;
    EXPECT_TRUE(c.WaitClosed()) << "the server did not disconnect";
    ExpectServing();
  }
  void ExpectServing() {
    RawClient ok;
    protocol::Accept a;
    ConnectOk(&ok, "default", &a);
  }
};

TEST_F(ServerRefusalTest, NoPrivateDataIsMalformed) {
  ExpectRefused(std::nullopt, Admit::kMalformed, "no private data");
}

// A NIC (and the tcp provider with RPMA_TCP_STRICT=1) zero-pads private
// data to 56 bytes: a truncated connect then reads as a bad name.
std::string TruncatedReason() {
  const char* strict = getenv("RPMA_TCP_STRICT");
  return strict != nullptr && strict[0] == '1' ? "keyspace name" : "truncated";
}

TEST_F(ServerRefusalTest, TruncatedHeaderIsMalformed) {
  ExpectRefused(Pdata("default").substr(0, 8), Admit::kMalformed,
                TruncatedReason());
}

TEST_F(ServerRefusalTest, TruncatedInsideTheNameIsMalformed) {
  ExpectRefused(Pdata("default").substr(0, protocol::kConnectHeader + 3),
                Admit::kMalformed, TruncatedReason());
}

TEST_F(ServerRefusalTest, BadMagic) {
  std::string p = Pdata("default");
  p[0] ^= 0x55;
  ExpectRefused(p, Admit::kBadMagic, "magic");
}

TEST_F(ServerRefusalTest, OneByteOfGarbageIsBadMagicOrMalformed) {
  RawClient c;
  protocol::Accept a = ConnectRaw(&c, std::string("\x01", 1));
  EXPECT_TRUE(a.admit == Admit::kMalformed || a.admit == Admit::kBadMagic);
  EXPECT_TRUE(c.WaitClosed());
  ExpectServing();
}

TEST_F(ServerRefusalTest, UnsupportedVersion) {
  std::string p = Pdata("default");
  p[4] = 7;
  ExpectRefused(p, Admit::kBadVersion, "version 7");
}

TEST_F(ServerRefusalTest, UnknownFlags) {
  std::string p = Pdata("default");
  p[5] = static_cast<char>(0x80);
  ExpectRefused(p, Admit::kMalformed, "unknown flags");
}

TEST_F(ServerRefusalTest, BadName) {
  ExpectRefused(Pdata("no/slash"), Admit::kMalformed, "[A-Za-z0-9_.-]");
}

TEST_F(ServerRefusalTest, EmptyNameWithoutHello) {
  ExpectRefused(Pdata(""), Admit::kMalformed, "1..63");
}

TEST_F(ServerRefusalTest, NameLengthOverTheInlineLimit) {
  std::string p = Pdata("default");
  p[6] = 41;
  ExpectRefused(p, Admit::kMalformed, "name length 41");
}

TEST_F(ServerRefusalTest, PrivateDataOverTheNicLimitNeverLeavesTheClient) {
  // 57 bytes: the provider refuses it as a NIC would; nothing reaches the
  // server, which keeps serving.
  RawClient c;
  Status st = c.Connect(server_.host(), server_.port(), std::string(57, 'x'));
  EXPECT_FALSE(st.ok());
  ExpectServing();
}

TEST_F(ServerRefusalTest, UnknownKeyspaceIsNamed) {
  ExpectRefused(Pdata("nosuch"), Admit::kUnknownKeyspace, "'nosuch'");
}

TEST_F(ServerRefusalTest, CreateFlagWithoutAllowCreateIsRefused) {
  ExpectRefused(Pdata("fresh", protocol::kConnectCreate),
                Admit::kUnknownKeyspace, "--allow_create");
}

TEST_F(ServerRefusalTest, RefusalsAreLoggedWithTheirReason) {
  ExpectRefused(Pdata("nosuch"), Admit::kUnknownKeyspace, "nosuch");
  EXPECT_TRUE(
      server_.WaitForLog("refused: unknown keyspace: no keyspace "
                         "'nosuch'"));
}

TEST_F(ServerAdmissionTest, AllowCreateCreatesAMissingKeyspace) {
  StartServer({"--allow_create"});
  {
    RawClient c;
    protocol::Accept a = ConnectRaw(&c, Pdata("fresh"));
    EXPECT_EQ(a.admit, Admit::kUnknownKeyspace) << "created without the flag";
  }
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "fresh", &a, protocol::kConnectCreate);
  protocol::Accept d;
  RawClient other;
  ConnectOk(&other, "default", &d);
  EXPECT_NE(a.keyspace_id, d.keyspace_id);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, a.grant, a.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  // Now it exists: a plain connect works, after a restart too.
  EXPECT_EQ(server_.Stop(), 0);
  ASSERT_TRUE(server_.Restart().ok());
  RawClient again;
  protocol::Accept b;
  ConnectOk(&again, "fresh", &b);
  EXPECT_EQ(b.keyspace_id, a.keyspace_id);
}

TEST_F(ServerAdmissionTest, TooManyConnectionsIsRefusedAndFreedOnClose) {
  StartServer({"--max_connections=2"});
  RawClient c1, c2, c3;
  protocol::Accept a;
  ConnectOk(&c1, "default", &a);
  ConnectOk(&c2, "default", &a);
  protocol::Accept r = ConnectRaw(&c3, Pdata("default"));
  EXPECT_EQ(r.admit, Admit::kTooManyConnections) << r.reason;
  EXPECT_TRUE(c3.WaitClosed());
  c1.Disconnect();
  // The slot frees once the server has seen the close.
  bool admitted = false;
  for (int i = 0; i < 50 && !admitted; i++) {
    RawClient c4;
    protocol::Accept b = ConnectRaw(&c4, Pdata("default"));
    admitted = b.admit == Admit::kOk;
    if (!admitted) usleep(20000);
  }
  EXPECT_TRUE(admitted);
}

}  // namespace
}  // namespace kv::e2e
