// Protocol version 3 (issue 21: the index grows online; readers fence on
// the index header). A version-2 client would read a grown index with the
// bucket count of its accept data and could take a moved key for absent,
// so kvserver refuses it — at connect, and in a message header — and
// keeps serving version-3 clients.
#include <gtest/gtest.h>

#include <cstring>

#include "kv/index_format.h"
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
  static_assert(protocol::kVersion == 3);
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
