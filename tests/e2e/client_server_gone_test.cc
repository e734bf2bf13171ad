// What a client says when things go wrong: a person's words, not the
// provider's ("Work Request Flushed Error" after a clean server stop), and
// the missing piece named (the server's flag, not the client's again).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

using ClientServerGoneTest = ClientTest;

TEST_F(ClientServerGoneTest, CleanStopSaysTheServerClosedTheConnection) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  server_.Stop();
  Status st = c->Put("k", "w");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find(server_.address()), std::string::npos)
      << st.ToString();
  // The explanation comes first; the provider's words, if any, only after
  // it (in brackets, for a report).
  const size_t said = st.message().find("closed the connection");
  ASSERT_NE(said, std::string::npos) << st.ToString();
  const size_t raw = st.message().find("Work Request Flushed");
  if (raw != std::string::npos) {
    EXPECT_GT(raw, said) << st.ToString();
    EXPECT_EQ(st.message()[raw - 1], '[') << st.ToString();
  }
}

// A Client whose connection failed stays failed (client.h): a server back
// on the same address does not revive it. Every later call fails with the
// first error, without a new connection; a new Client is served.
TEST_F(ClientServerGoneTest, AClientWhoseServerWentAwayStaysFailed) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  server_.Stop();
  const Status first = c->Put("k", "w");
  ASSERT_EQ(first.code(), StatusCode::kUnavailable) << first.ToString();
  ASSERT_TRUE(server_.Restart().ok());
  const size_t restarted = server_.StderrText().size();
  std::string got;
  for (const Status& st : {c->Put("k", "x"), c->Get("k", &got), c->Delete("k"),
                           c->Ping().status()}) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
    // The first error (a write's carries "may or may not have been
    // applied" after it).
    EXPECT_EQ(first.message().rfind(st.message(), 0), 0u)
        << st.ToString() << " / " << first.ToString();
  }
  // No connection was made to the restarted server.
  EXPECT_EQ(server_.StderrText().find("session ", restarted), std::string::npos)
      << server_.StderrText().substr(restarted);
  auto fresh = Open();
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
}

// True once `pid` is stopped (its /proc state is T), within 5 s.
bool WaitStopped(pid_t pid) {
  for (int i = 0; i < 500; i++) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() &&
        stat[paren + 2] == 'T') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The same after a timeout: the server stopped answering (SIGSTOP), a put
// timed out, and the server answers again (SIGCONT); the Client still
// fails at once with the timeout, and a new one is served.
TEST_F(ClientServerGoneTest, AClientThatTimedOutStaysFailed) {
  ClientOptions o = Options();
  o.op_timeout = std::chrono::milliseconds(2000);  // ample under TSan
  auto c = Open(o);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  ASSERT_EQ(kill(server_.pid(), SIGSTOP), 0);
  // SIGSTOP takes effect asynchronously: wait until the server is stopped
  // (state T), or a put may still be served (seen in CI).
  ASSERT_TRUE(WaitStopped(server_.pid()));
  const Status first = c->Put("k", "w");
  ASSERT_EQ(kill(server_.pid(), SIGCONT), 0);
  ASSERT_EQ(first.code(), StatusCode::kTimedOut) << first.ToString();
  auto fresh = Open();  // the server answers again
  ASSERT_NE(fresh, nullptr);
  std::string got;
  ASSERT_TRUE(fresh->Get("k", &got).ok());
  const Status later = c->Get("k", &got);
  EXPECT_EQ(later.code(), StatusCode::kTimedOut) << later.ToString();
  EXPECT_EQ(first.message().rfind(later.message(), 0), 0u)
      << later.ToString() << " / " << first.ToString();
}

// Something that is not kvserver listens on the port: it takes the TCP
// connection and closes it. The client says what a person would check,
// with the provider's words ("Connection lost") only in brackets after.
TEST(ClientNotAServerTest, APortThatHangsUpSaysWhatToCheck) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  std::thread hangs_up([fd] {
    const int c = accept(fd, nullptr, nullptr);
    if (c >= 0) close(c);
  });
  ClientOptions o;
  o.server = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  o.connect_timeout = std::chrono::milliseconds(2000);
  auto c = Client::Connect(o);
  hangs_up.join();
  close(fd);
  ASSERT_FALSE(c.ok());
  const Status st = c.status();
  const std::string m = st.message();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << m;
  const size_t said = m.find("is kvserver running there");
  ASSERT_NE(said, std::string::npos) << m;
  const size_t raw = m.find("Connection lost");
  if (raw != std::string::npos) EXPECT_GT(raw, said) << m;
}

// A server without --allow_create.
class ClientNoCreateTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=256M"};
  }
};

TEST_F(ClientNoCreateTest, RefusedCreateNamesTheServersFlag) {
  ClientOptions o = Options();
  o.keyspace = "fresh";
  o.create_if_missing = true;
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  const Status& st = c.status();
  EXPECT_TRUE(st.IsNotFound()) << st.ToString();
  EXPECT_NE(st.message().find("start kvserver with --allow_create"),
            std::string::npos)
      << st.ToString();
  EXPECT_EQ(st.message().find("connect with --create"), std::string::npos)
      << "the client flag it already gave: " << st.ToString();
  // Without the create flag, the client's flag is the hint.
  o.create_if_missing = false;
  c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("connect with --create"),
            std::string::npos)
      << c.status().ToString();
}

}  // namespace
}  // namespace kv::e2e
