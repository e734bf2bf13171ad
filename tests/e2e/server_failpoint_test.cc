// Failure paths a client cannot reach, driven by kvserver's test
// failpoints (KVSERVER_FAILPOINT, server/README.md).
#include <cstdlib>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerFailpointTest : public ServerTest {
 protected:
  void StartWithFailpoint(const char* name) {
    setenv("KVSERVER_FAILPOINT", name, 1);
    StartServer();
    unsetenv("KVSERVER_FAILPOINT");
  }
};

// Posting a session's receives fails after one was posted: the request
// must be rejected, not accepted with a refusal — an accepted connection's
// posted receive would point into the session's buffers, freed when the
// refusal returns, and the client's next message would land there.
TEST_F(ServerFailpointTest, PostReceivesFailureRejectsTheConnection) {
  StartWithFailpoint("post_receives");
  {
    RawClient c;
    Status st = c.ConnectTo(server_.host(), server_.port(), "default");
    EXPECT_FALSE(st.ok()) << "the connection was accepted";
    if (st.ok()) {
      // What the old path allowed: a message into the freed buffers (ASan
      // reports it in the server).
      (void)c.SendMessage(protocol::Type::kInfo, std::string(1, '\0'));
    }
  }
  EXPECT_TRUE(server_.WaitForLog("posting receives")) << server_.StderrText();
  // The failpoint fires once; the server keeps serving.
  RawClient ok;
  protocol::Accept a;
  ConnectOk(&ok, "default", &a);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&ok, a, a.grant, a.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  EXPECT_EQ(server_.Stop(), 0) << server_.StderrText();
}

}  // namespace
}  // namespace kv::e2e
