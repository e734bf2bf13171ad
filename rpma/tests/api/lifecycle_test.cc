// Connection lifecycle between two real processes on 127.0.0.1 (fork):
// private data both ways, disconnect seen as CLOSED on both sides, a peer
// killed with SIGKILL, and a connect nobody answers. Bounded everywhere.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "api_test_util.h"
#include "librpma.h"

namespace {

using rpma_test::kAddr;
using rpma_test::NextEvent;
using rpma_test::Readable;

// The child's exit codes name the step that failed.
#define CHILD_CHECK(cond, code) \
  do {                          \
    if (!(cond)) _exit(code);   \
  } while (0)

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rpma_test::UseTestProvider();
    port_ = rpma_test::Port(9);
    ASSERT_EQ(pipe(to_parent_), 0);
    ASSERT_EQ(pipe(to_child_), 0);
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    for (int fd : {to_parent_[0], to_parent_[1], to_child_[0], to_child_[1]})
      close(fd);
  }
  // Runs fn in a child process (which exits with fn's result, or 99 after
  // 20 s) and returns once it is started.
  void Spawn(const std::function<int()>& fn) {
    child_ = fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      alarm(20);
      _exit(fn());
    }
  }
  // One byte between the processes (bounded).
  void Signal(int fd) { ASSERT_EQ(write(fd, "x", 1), 1); }
  bool Await(int fd, int timeout_ms = 10000) {
    if (!Readable(fd, timeout_ms)) return false;
    char c;
    return read(fd, &c, 1) == 1;
  }
  // Waits for the child and returns its exit code (-1: killed/timeout).
  int Reap() {
    int status = 0;
    for (int i = 0; i < 200; i++) {
      if (waitpid(child_, &status, WNOHANG) == child_) {
        child_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(50000);
    }
    return -1;
  }
  struct rpma_peer* NewPeer() {
    struct ibv_context* ctx = nullptr;
    struct rpma_peer* peer = nullptr;
    if (rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx))
      return nullptr;
    if (rpma_peer_new(ctx, &peer)) return nullptr;
    return peer;
  }
  // Child side: listen, tell the parent, accept with `reply`.
  int ServeOne(struct rpma_peer* peer, struct rpma_ep** ep,
               struct rpma_conn** conn, const char* reply) {
    if (rpma_ep_listen(peer, kAddr, port_.c_str(), ep)) return 2;
    if (write(to_parent_[1], "l", 1) != 1) return 3;
    int fd = -1;
    rpma_ep_get_fd(*ep, &fd);
    if (!Readable(fd, 10000)) return 4;
    struct rpma_conn_req* req = nullptr;
    if (rpma_ep_next_conn_req(*ep, nullptr, &req)) return 5;
    struct rpma_conn_private_data pd;
    if (rpma_conn_req_get_private_data(req, &pd)) return 6;
    // At least what was sent: a NIC delivers the whole field, zero-padded.
    if (pd.len < 7 || std::memcmp(pd.ptr, "client", 7) != 0) return 7;
    struct rpma_conn_private_data out = {
        const_cast<char*>(reply), static_cast<uint8_t>(std::strlen(reply) + 1)};
    if (rpma_conn_req_connect(&req, &out, conn)) return 8;
    enum rpma_conn_event ev;
    if (NextEvent(*conn, &ev, 10000) || ev != RPMA_CONN_ESTABLISHED) return 9;
    return 0;
  }
  // Parent side: connect with "client" and wait for ESTABLISHED.
  void ConnectTo(struct rpma_peer* peer, struct rpma_conn** conn) {
    ASSERT_TRUE(Await(to_parent_[0])) << "server did not start";
    struct rpma_conn_req* req = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer, kAddr, port_.c_str(), nullptr, &req), 0);
    char hello[] = "client";
    struct rpma_conn_private_data pd = {hello, sizeof(hello)};
    ASSERT_EQ(rpma_conn_req_connect(&req, &pd, conn), 0);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(NextEvent(*conn, &ev, 10000), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED) << rpma_utils_conn_event_2str(ev);
  }

  std::string port_;
  pid_t child_ = -1;
  int to_parent_[2] = {-1, -1};
  int to_child_[2] = {-1, -1};
};

TEST_F(LifecycleTest, PrivateDataBothWaysAndClosedOnBothSides) {
  Spawn([this] {
    struct rpma_peer* peer = NewPeer();
    CHILD_CHECK(peer != nullptr, 1);
    struct rpma_ep* ep = nullptr;
    struct rpma_conn* conn = nullptr;
    int rc = ServeOne(peer, &ep, &conn, "server says hi");
    if (rc) return rc;
    struct rpma_conn_private_data pd;
    CHILD_CHECK(rpma_conn_get_private_data(conn, &pd) == 0, 10);
    CHILD_CHECK(pd.len >= 7 && std::memcmp(pd.ptr, "client", 7) == 0, 11);
    enum rpma_conn_event ev;
    CHILD_CHECK(NextEvent(conn, &ev, 10000) == 0, 12);
    CHILD_CHECK(ev == RPMA_CONN_CLOSED, 13);
    CHILD_CHECK(rpma_conn_disconnect(conn) == 0, 14);
    CHILD_CHECK(rpma_conn_delete(&conn) == 0, 15);
    CHILD_CHECK(rpma_ep_shutdown(&ep) == 0, 16);
    CHILD_CHECK(rpma_peer_delete(&peer) == 0, 17);
    return 0;
  });
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_conn* conn = nullptr;
  ConnectTo(peer, &conn);
  if (HasFatalFailure()) return;
  struct rpma_conn_private_data pd;
  ASSERT_EQ(rpma_conn_get_private_data(conn, &pd), 0);
  ASSERT_GE(pd.len, std::strlen("server says hi") + 1);
  EXPECT_STREQ(static_cast<char*>(pd.ptr), "server says hi");
  ASSERT_EQ(rpma_conn_disconnect(conn), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(conn, &ev, 10000), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
  EXPECT_EQ(rpma_conn_delete(&conn), 0);
  EXPECT_EQ(Reap(), 0);
  EXPECT_EQ(rpma_peer_delete(&peer), 0);
}

TEST_F(LifecycleTest, ServerDisconnectIsClosedAtClient) {
  Spawn([this] {
    struct rpma_peer* peer = NewPeer();
    CHILD_CHECK(peer != nullptr, 1);
    struct rpma_ep* ep = nullptr;
    struct rpma_conn* conn = nullptr;
    int rc = ServeOne(peer, &ep, &conn, "bye");
    if (rc) return rc;
    CHILD_CHECK(rpma_conn_disconnect(conn) == 0, 10);
    enum rpma_conn_event ev;
    CHILD_CHECK(NextEvent(conn, &ev, 10000) == 0, 11);
    CHILD_CHECK(ev == RPMA_CONN_CLOSED, 12);
    CHILD_CHECK(rpma_conn_delete(&conn) == 0, 13);
    rpma_ep_shutdown(&ep);
    rpma_peer_delete(&peer);
    return 0;
  });
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_conn* conn = nullptr;
  ConnectTo(peer, &conn);
  if (HasFatalFailure()) return;
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(conn, &ev, 10000), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
  // Completing the teardown after CLOSED returns 0.
  EXPECT_EQ(rpma_conn_disconnect(conn), 0);
  EXPECT_EQ(rpma_conn_delete(&conn), 0);
  EXPECT_EQ(Reap(), 0);
  rpma_peer_delete(&peer);
}

TEST_F(LifecycleTest, KilledServerIsClosedOrLostAtClient) {
  Spawn([this] {
    struct rpma_peer* peer = NewPeer();
    CHILD_CHECK(peer != nullptr, 1);
    struct rpma_ep* ep = nullptr;
    struct rpma_conn* conn = nullptr;
    int rc = ServeOne(peer, &ep, &conn, "doomed");
    if (rc) return rc;
    pause();  // until SIGKILL
    return 0;
  });
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_conn* conn = nullptr;
  ConnectTo(peer, &conn);
  if (HasFatalFailure()) return;
  ASSERT_EQ(kill(child_, SIGKILL), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(conn, &ev, 10000), 0) << "the death went unnoticed";
  EXPECT_TRUE(ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST)
      << rpma_utils_conn_event_2str(ev);
  EXPECT_EQ(rpma_conn_disconnect(conn), 0);
  EXPECT_EQ(rpma_conn_delete(&conn), 0);
  rpma_peer_delete(&peer);
}

TEST_F(LifecycleTest, KilledClientIsClosedOrLostAtServer) {
  Spawn([this] {
    struct rpma_peer* peer = NewPeer();
    CHILD_CHECK(peer != nullptr, 1);
    CHILD_CHECK(Await(to_child_[0]), 2);  // the server listens
    struct rpma_conn_req* req = nullptr;
    CHILD_CHECK(
        rpma_conn_req_new(peer, kAddr, port_.c_str(), nullptr, &req) == 0, 3);
    char hello[] = "client";
    struct rpma_conn_private_data pd = {hello, sizeof(hello)};
    struct rpma_conn* conn = nullptr;
    CHILD_CHECK(rpma_conn_req_connect(&req, &pd, &conn) == 0, 4);
    enum rpma_conn_event ev;
    CHILD_CHECK(NextEvent(conn, &ev, 10000) == 0, 5);
    CHILD_CHECK(ev == RPMA_CONN_ESTABLISHED, 6);
    pause();  // until SIGKILL
    return 0;
  });
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_ep* ep = nullptr;
  ASSERT_EQ(rpma_ep_listen(peer, kAddr, port_.c_str(), &ep), 0);
  Signal(to_child_[1]);
  int fd = -1;
  ASSERT_EQ(rpma_ep_get_fd(ep, &fd), 0);
  ASSERT_TRUE(Readable(fd, 10000));
  struct rpma_conn_req* req = nullptr;
  ASSERT_EQ(rpma_ep_next_conn_req(ep, nullptr, &req), 0);
  struct rpma_conn* conn = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &conn), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(conn, &ev, 10000), 0);
  ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  ASSERT_EQ(kill(child_, SIGKILL), 0);
  ASSERT_EQ(NextEvent(conn, &ev, 10000), 0) << "the death went unnoticed";
  EXPECT_TRUE(ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST)
      << rpma_utils_conn_event_2str(ev);
  EXPECT_EQ(rpma_conn_disconnect(conn), 0);
  EXPECT_EQ(rpma_conn_delete(&conn), 0);
  EXPECT_EQ(rpma_ep_shutdown(&ep), 0);
  rpma_peer_delete(&peer);
}

TEST_F(LifecycleTest, ServerStillServesAfterClientWasKilled) {
  // A second client after the first one died mid-connection.
  Spawn([this] {
    struct rpma_peer* peer = NewPeer();
    CHILD_CHECK(peer != nullptr, 1);
    CHILD_CHECK(Await(to_child_[0]), 2);
    struct rpma_conn_req* req = nullptr;
    CHILD_CHECK(
        rpma_conn_req_new(peer, kAddr, port_.c_str(), nullptr, &req) == 0, 3);
    struct rpma_conn* conn = nullptr;
    CHILD_CHECK(rpma_conn_req_connect(&req, nullptr, &conn) == 0, 4);
    pause();
    return 0;
  });
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_ep* ep = nullptr;
  ASSERT_EQ(rpma_ep_listen(peer, kAddr, port_.c_str(), &ep), 0);
  Signal(to_child_[1]);
  int fd = -1;
  ASSERT_EQ(rpma_ep_get_fd(ep, &fd), 0);
  ASSERT_TRUE(Readable(fd, 10000));
  kill(child_, SIGKILL);
  waitpid(child_, nullptr, 0);
  child_ = -1;
  // Its pending request may be consumed or gone; either way the endpoint
  // keeps working for a new client in this process.
  struct rpma_conn_req* req = nullptr;
  if (rpma_ep_next_conn_req(ep, nullptr, &req) == 0) rpma_conn_req_delete(&req);
  struct rpma_conn_req* creq = nullptr;
  ASSERT_EQ(rpma_conn_req_new(peer, kAddr, port_.c_str(), nullptr, &creq), 0);
  struct rpma_conn* client = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client), 0);
  ASSERT_TRUE(Readable(fd, 10000));
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_EQ(rpma_ep_next_conn_req(ep, nullptr, &sreq), 0);
  struct rpma_conn* server = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(client, &ev, 10000), 0);
  EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
  rpma_conn_disconnect(client);
  rpma_conn_delete(&client);
  rpma_conn_delete(&server);
  rpma_ep_shutdown(&ep);
  rpma_peer_delete(&peer);
}

TEST_F(LifecycleTest, ConnectToPortNobodyListensOnNeverHangs) {
  struct rpma_peer* peer = NewPeer();
  ASSERT_NE(peer, nullptr);
  struct rpma_conn_req* req = nullptr;
  int rc = rpma_conn_req_new(peer, kAddr, port_.c_str(), nullptr, &req);
  if (rc == 0) {
    struct rpma_conn* conn = nullptr;
    rc = rpma_conn_req_connect(&req, nullptr, &conn);
    if (rc == 0) {
      enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
      // Default timeout is 1000 ms: an answer well within 5 s.
      ASSERT_EQ(NextEvent(conn, &ev, 5000), 0) << "connect hangs";
      EXPECT_TRUE(ev == RPMA_CONN_REJECTED || ev == RPMA_CONN_UNREACHABLE)
          << rpma_utils_conn_event_2str(ev);
      EXPECT_EQ(rpma_conn_delete(&conn), 0);
    } else {
      EXPECT_EQ(rc, RPMA_E_PROVIDER);
    }
  } else {
    EXPECT_EQ(rc, RPMA_E_PROVIDER);
  }
  rpma_peer_delete(&peer);
}

}  // namespace
