// The client's checks of what the server answers: an acknowledgement must
// name a request in flight, have the right type and length; anything else
// (but a status code this client does not know: that request alone fails)
// fails the connection (unavailable, with what was wrong) instead of
// completing the wrong operation or waiting for the timeout. The server
// is real; the engine's message hook changes what the client received.
#include <gtest/gtest.h>

#include <string>

#include "get_path_fixture.h"

namespace kv::client_test {
namespace {

namespace pr = kv::protocol;

class EngineAckTest : public GetPathTest {
 protected:
  std::unique_ptr<Client> Client3s() {
    ClientOptions o = Options();
    o.op_timeout = std::chrono::milliseconds(3000);
    return Open(o);
  }
  // Changes every received message of `type` with fn.
  void OnMessage(pr::Type type, std::function<void(Connection::Event*)> fn) {
    engine_hooks_for_testing.message = [type, fn](Connection::Event* e) {
      if (e->header.type == type) fn(e);
    };
  }
  // st is unavailable naming `what`, and the connection stays failed.
  static void ExpectFailed(Client* c, const Status& st,
                           const std::string& what) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
    engine_hooks_for_testing = {};
    std::string got;
    EXPECT_EQ(c->Get("any", &got).code(), StatusCode::kUnavailable);
  }
};

TEST_F(EngineAckTest, ACommitAckForAnUnknownRequestFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kCommitAck,
            [](Connection::Event* e) { e->header.request_id += 1000; });
  ExpectFailed(c.get(), c->Put("k", "v"), "unknown request");
}

TEST_F(EngineAckTest, InABatchEachAckCompletesItsOwnRequest) {
  auto c = Client3s();
  Batch b;
  for (int i = 0; i < 32; i++) {
    b.Put("k" + std::to_string(i), "v" + std::to_string(i));
  }
  ASSERT_TRUE(c->Execute(&b).ok());
  // Overwrite each key: the version each op reports must be its key's.
  std::vector<uint64_t> first(32);
  for (int i = 0; i < 32; i++) {
    ASSERT_TRUE(b.result(i).status.ok());
    first[i] = b.result(i).version.sequence;
  }
  b.Clear();
  for (int i = 0; i < 32; i++) {
    b.Put("k" + std::to_string(i), "w" + std::to_string(i),
          {.if_version = first[i]});
  }
  ASSERT_TRUE(c->Execute(&b).ok());
  for (int i = 0; i < 32; i++) {
    ASSERT_TRUE(b.result(i).status.ok()) << i << b.result(i).status.ToString();
    EXPECT_TRUE(b.result(i).had_previous);
    std::string got;
    KeyVersion v;
    ASSERT_TRUE(c->Get("k" + std::to_string(i), &got, &v).ok());
    EXPECT_EQ(got, "w" + std::to_string(i));
    EXPECT_EQ(v.sequence, b.result(i).version.sequence) << i;
  }
}

TEST_F(EngineAckTest, AShortCommitAckFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kCommitAck,
            [](Connection::Event* e) { e->body.resize(e->body.size() - 1); });
  ExpectFailed(c.get(), c->Put("k", "v"), "bad COMMIT_ACK");
}

TEST_F(EngineAckTest, AnAckOfTheWrongTypeFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kCommitAck,
            [](Connection::Event* e) { e->header.type = pr::Type::kInfoAck; });
  ExpectFailed(c.get(), c->Put("k", "v"), "unexpected message");
}

TEST_F(EngineAckTest, AnEmptyInfoAckFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kInfoAck, [](Connection::Event* e) { e->body.clear(); });
  Result<std::string> r = c->Info(Client::InfoTopic::kStats);
  ExpectFailed(c.get(), r.status(), "bad INFO_ACK");
}

// A status code this client does not know (a newer server's): that
// request fails as unavailable with its outcome unknown, and the
// connection goes on (docs/protocol.md, "Status codes").
TEST_F(EngineAckTest, AnInfoAckWithAnUnknownStatusFailsOnlyThatRequest) {
  auto c = Client3s();
  OnMessage(pr::Type::kInfoAck,
            [](Connection::Event* e) { e->body[0] = pr::kMaxStatusCode + 1; });
  Result<std::string> r = c->Info(Client::InfoTopic::kStats);
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("which this client does not know"),
            std::string::npos)
      << r.status().message();
  engine_hooks_for_testing = {};
  EXPECT_TRUE(c->Info(Client::InfoTopic::kStats).ok());
}

TEST_F(EngineAckTest, ACommitAckWithAnUnknownStatusFailsOnlyThatPut) {
  auto c = Client3s();
  OnMessage(pr::Type::kCommitAck,
            [](Connection::Event* e) { e->body[0] = pr::kMaxStatusCode + 7; });
  Status st = c->Put("k", "v");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("outcome is unknown"), std::string::npos)
      << st.message();
  engine_hooks_for_testing = {};
  ASSERT_TRUE(c->Put("k2", "v2").ok());
  std::string got;
  ASSERT_TRUE(c->Get("k2", &got).ok());
  EXPECT_EQ(got, "v2");
}

// Values of ~20 KiB in the fixture's 64 KiB segments: a refill every few
// puts.
Status PutUntilRefill(Client* c) {
  const std::string v(20000, 'r');
  Status st;
  for (int i = 0; i < 8 && st.ok(); i++)
    st = c->Put("r" + std::to_string(i), v);
  return st;
}

TEST_F(EngineAckTest, AShortRefillAckFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kRefillAck,
            [](Connection::Event* e) { e->body.resize(e->body.size() / 2); });
  ExpectFailed(c.get(), PutUntilRefill(c.get()), "bad REFILL_ACK");
}

TEST_F(EngineAckTest, ARefillAckForAnotherRequestFailsTheConnection) {
  auto c = Client3s();
  OnMessage(pr::Type::kRefillAck,
            [](Connection::Event* e) { e->header.request_id += 1000; });
  ExpectFailed(c.get(), PutUntilRefill(c.get()), "unknown request");
}

TEST_F(EngineAckTest, AnErrorMessageFailsWithTheServersText) {
  auto c = Client3s();
  OnMessage(pr::Type::kCommitAck, [](Connection::Event* e) {
    e->header.type = pr::Type::kError;
    const std::string text = "Xrefused for a test";
    e->body.assign(text.begin(), text.end());
  });
  ExpectFailed(c.get(), c->Put("k", "v"), "refused for a test");
}

}  // namespace
}  // namespace kv::client_test
