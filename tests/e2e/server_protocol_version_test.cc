// Protocol version 3 (issue 21: the index grows online; readers fence on
// the index header). A version-2 client would read a grown index with the
// bucket count of its accept data and could take a moved key for absent,
// so kvserver refuses it — at connect, and in a message header — and
// keeps serving current clients. Version 4 (issue 22: expiring keys): a
// version-3 client would fail a record with an expiry as corrupt and
// could not learn the server's clock, so it is refused too.
#include <gtest/gtest.h>

#include <cstring>

#include "kv/index_format.h"
#include "kv/server_clock.h"
#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

class ServerProtocolVersionTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    StartServer();
  }
};

TEST_F(ServerProtocolVersionTest, AVersion2ConnectIsRefusedAndSaysSo) {
  static_assert(protocol::kVersion == 4);
  std::string pdata = ConnectPdata("default", 0);
  pdata[4] = 2;
  RawClient old;
  protocol::Accept a = ConnectRaw(&old, pdata);
  EXPECT_EQ(a.admit, Admit::kBadVersion)
      << protocol::AdmitName(a.admit) << ": " << a.reason;
  EXPECT_NE(a.reason.find("version 2"), std::string::npos) << a.reason;
  // No descriptor reaches the refused client.
  const protocol::Accept empty;
  EXPECT_EQ(std::memcmp(a.read_desc, empty.read_desc, sizeof(a.read_desc)), 0);
  EXPECT_TRUE(old.WaitClosed()) << "the server did not disconnect";
  // A version-3 client is admitted, and its read region starts with the
  // index header of the accept's geometry.
  RawClient c;
  protocol::Accept ok;
  ConnectOk(&c, "default", &ok, 0, /*take_grant=*/false);
  std::string bytes;
  ASSERT_TRUE(
      c.Read(ok.read_desc, 0, index_format::kIndexHeaderSize, &bytes).ok());
  index_format::IndexHeader h;
  ASSERT_TRUE(index_format::DecodeIndexHeader(
      reinterpret_cast<const uint8_t*>(bytes.data()), &h));
  EXPECT_EQ(h.bucket_count, ok.bucket_count);
  EXPECT_EQ(h.generation, 1u);
}

TEST_F(ServerProtocolVersionTest, AVersion3ConnectIsRefusedAndSaysSo) {
  std::string pdata = ConnectPdata("default", 0);
  pdata[4] = 3;
  RawClient old;
  protocol::Accept a = ConnectRaw(&old, pdata);
  EXPECT_EQ(a.admit, Admit::kBadVersion)
      << protocol::AdmitName(a.admit) << ": " << a.reason;
  EXPECT_NE(a.reason.find("version 3"), std::string::npos) << a.reason;
  EXPECT_TRUE(old.WaitClosed()) << "the server did not disconnect";
}

TEST_F(ServerProtocolVersionTest, APingReplyCarriesTheServerClock) {
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
  uint8_t msg[protocol::kHeaderSize + 1] = {};
  protocol::Header h;
  h.type = protocol::Type::kInfo;
  h.request_id = 5;
  protocol::EncodeInfo(protocol::InfoTopic::kPing, msg + protocol::kHeaderSize);
  const uint64_t before = UnixMillisNow();
  ASSERT_EQ(protocol::EncodeMessage(h, msg + protocol::kHeaderSize, 1, msg),
            sizeof(msg));
  ASSERT_TRUE(
      c.SendRaw(std::string_view(reinterpret_cast<char*>(msg), sizeof(msg)))
          .ok());
  protocol::Header reply;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&reply, &payload).ok());
  const uint64_t after = UnixMillisNow();
  ASSERT_EQ(reply.type, protocol::Type::kInfoAck);
  ASSERT_GE(payload.size(), 1u);
  EXPECT_EQ(payload[0], 0);
  uint64_t server_ms = 0;
  ASSERT_TRUE(protocol::ParsePingText(payload.substr(1), &server_ms).ok())
      << payload.substr(1);
  // Same host, same clock: inside the round trip.
  EXPECT_GE(server_ms, before);
  EXPECT_LE(server_ms, after);
}

TEST_F(ServerProtocolVersionTest, AVersion2MessageIsAnErrorAndCloses) {
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
  uint8_t msg[protocol::kHeaderSize + 1] = {};
  protocol::Header h;
  h.type = protocol::Type::kInfo;
  h.request_id = 3;
  h.length = 1;
  protocol::EncodeHeader(h, msg);
  msg[2] = 2;  // the version byte
  ASSERT_TRUE(
      c.SendRaw(std::string_view(reinterpret_cast<char*>(msg), sizeof(msg)))
          .ok());
  protocol::Header reply;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&reply, &payload).ok());
  EXPECT_EQ(reply.type, protocol::Type::kError);
  EXPECT_TRUE(c.WaitClosed());
}

}  // namespace
}  // namespace kv::e2e
