// kvserver: the HELLO path (long names, access keys) and its timeout.
#include <sys/stat.h>

#include <fstream>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;

class ServerHelloTest : public ServerTest {
 protected:
  // Writes the access keys file with `mode`.
  std::string WriteKeys(const std::string& text, mode_t mode = 0600) {
    const std::string path = dir_ + "/keys";
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
    return path;
  }
  // Connects with the HELLO flag (expects "hello required"), sends HELLO
  // and returns the WELCOME's accept.
  protocol::Accept Hello(RawClient* c, const std::string& name,
                         const std::string& key, uint8_t flags = 0) {
    protocol::Accept w = SendHello(c, name, key, flags);
    Status st;
    // Admitted: the WELCOME carries a ticket, not descriptors; the
    // connection with it is made in the keyspace's protection domain.
    if (w.admit == Admit::kReconnect) {
      EXPECT_EQ(w.read_desc[20], 0);
      w = Reconnect(c, w);
    }
    if (w.admit == Admit::kOk) {
      // Grants are lazy: the WELCOME carries none; REFILL takes one.
      EXPECT_EQ(w.grant.size, 0u);
      protocol::RefillAck ack;
      st = Refill(c, w, &ack);
      EXPECT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
      w.grant = ack.grant;
    }
    return w;
  }
};

TEST_F(ServerHelloTest, LongNameTravelsInHello) {
  const std::string name(63, 'n');
  StartServer({"--allow_create"});
  RawClient c;
  protocol::Accept w = Hello(&c, name, "", protocol::kConnectCreate);
  ASSERT_EQ(w.admit, Admit::kOk) << w.reason;
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, w, w.grant, w.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
}

TEST_F(ServerHelloTest, HelloForAnUnknownKeyspaceIsRefusedAndClosed) {
  StartServer();
  RawClient c;
  protocol::Accept w = Hello(&c, "nosuch", "");
  EXPECT_EQ(w.admit, Admit::kUnknownKeyspace);
  EXPECT_NE(w.reason.find("'nosuch'"), std::string::npos) << w.reason;
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(ServerHelloTest, RightKeyIsAdmitted) {
  StartServer(
      {"--access_keys=" + WriteKeys("# comment\ndefault s3cret-0123456789\n")});
  RawClient c;
  protocol::Accept w = Hello(&c, "default", "s3cret-0123456789");
  ASSERT_EQ(w.admit, Admit::kOk) << w.reason;
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, w, w.grant, w.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk);
}

TEST_F(ServerHelloTest, WrongKeyIsDenied) {
  StartServer({"--access_keys=" + WriteKeys("default s3cret-0123456789\n")});
  for (const std::string key : {"s3creT", "s3cre", "s3cret-0123456789!", "x"}) {
    RawClient c;
    protocol::Accept w = Hello(&c, "default", key);
    EXPECT_EQ(w.admit, Admit::kAccessDenied) << key;
    EXPECT_NE(w.reason.find("wrong access key"), std::string::npos);
    // No descriptor handed out.
    EXPECT_EQ(w.grant.grant_id, 0u);
    EXPECT_EQ(w.read_desc[20], 0);
    EXPECT_TRUE(c.WaitClosed());
  }
}

TEST_F(ServerHelloTest, MissingKeyIsDenied) {
  StartServer({"--access_keys=" + WriteKeys("default s3cret-0123456789\n")});
  RawClient c;
  protocol::Accept w = Hello(&c, "default", "");
  EXPECT_EQ(w.admit, Admit::kAccessDenied);
  EXPECT_NE(w.reason.find("needs an access key"), std::string::npos);
}

TEST_F(ServerHelloTest, ProtectedKeyspaceWithoutHelloIsDenied) {
  StartServer({"--access_keys=" + WriteKeys("default s3cret-0123456789\n")});
  RawClient c;
  protocol::Accept a = ConnectRaw(&c, ConnectPdata("default"));
  EXPECT_EQ(a.admit, Admit::kAccessDenied) << a.reason;
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(ServerHelloTest, KeyForAnotherKeyspaceDoesNotOpenThisOne) {
  StartServer(
      {"--allow_create",
       "--access_keys=" +
           WriteKeys("default aaaaaaaaaaaaaaaa\nother bbbbbbbbbbbbbbbb\n")});
  RawClient c;
  protocol::Accept w =
      Hello(&c, "other", "aaaaaaaaaaaaaaaa", protocol::kConnectCreate);
  EXPECT_EQ(w.admit, Admit::kAccessDenied);
}

TEST_F(ServerHelloTest, UnprotectedKeyspaceNeedsNoKey) {
  StartServer({"--allow_create",
               "--access_keys=" + WriteKeys("secure kkkkkkkkkkkkkkkk\n")});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
}

TEST_F(ServerHelloTest, KeysFileReadableByOthersIsRefusedAtStart) {
  const std::string keys = WriteKeys("default s3cret-0123456789\n", 0644);
  std::string err;
  int code = RunToExit({KvserverPath(), "--pool=" + pool_, "--pool_size=64M",
                        "--listen=127.0.0.1:" + std::to_string(PickFreePort()),
                        "--access_keys=" + keys},
                       &err);
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("mode 0644"), std::string::npos) << err;
  EXPECT_NE(err.find("chmod 600"), std::string::npos) << err;
}

TEST_F(ServerHelloTest, MalformedKeysFileIsRefusedAtStart) {
  const std::string keys = WriteKeys("default\n");
  std::string err;
  int code = RunToExit({KvserverPath(), "--pool=" + pool_, "--pool_size=64M",
                        "--listen=127.0.0.1:" + std::to_string(PickFreePort()),
                        "--access_keys=" + keys},
                       &err);
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("line 1"), std::string::npos) << err;
}

TEST_F(ServerHelloTest, NoHelloInTimeIsRefusedAndClosed) {
  StartServer({"--hello_timeout_ms=300"});
  RawClient c;
  protocol::Accept a =
      ConnectRaw(&c, ConnectPdata("", protocol::kConnectHello));
  ASSERT_EQ(a.admit, Admit::kHelloRequired);
  protocol::Header h;
  std::string payload;
  Status st = c.ReceiveMessage(&h, &payload, std::chrono::seconds(3));
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(h.type, protocol::Type::kWelcome);
  protocol::Accept w;
  ASSERT_TRUE(protocol::DecodeAccept(payload.data(), payload.size(), &w).ok());
  EXPECT_EQ(w.admit, Admit::kMalformed);
  EXPECT_NE(w.reason.find("no HELLO within 300 ms"), std::string::npos);
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(server_.WaitForLog("hello timeout"));
}

TEST_F(ServerHelloTest, OtherMessageBeforeHelloIsAnError) {
  StartServer();
  RawClient c;
  protocol::Accept a =
      ConnectRaw(&c, ConnectPdata("", protocol::kConnectHello));
  ASSERT_EQ(a.admit, Admit::kHelloRequired);
  ASSERT_TRUE(c.SendMessage(protocol::Type::kRefill, "").ok());
  protocol::Header h;
  std::string payload;
  ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
  EXPECT_EQ(h.type, protocol::Type::kError);
  EXPECT_TRUE(c.WaitClosed());
}

}  // namespace
}  // namespace kv::e2e
