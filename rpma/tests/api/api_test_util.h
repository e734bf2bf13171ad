// Helpers of the rpma API tests: the tcp provider on 127.0.0.1, ports
// derived from the pid (parallel ctest runs do not collide), and an
// in-process connected pair.
#ifndef RPMA_TESTS_API_API_TEST_UTIL_H_
#define RPMA_TESTS_API_API_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "librpma.h"

namespace rpma_test {

// RPMA_TEST_VERBS_IP=<an address owned by an RDMA device> runs the API
// suites on the verbs provider against that address (rxe/siw work; see
// docs/verbs_provider.md); by default they run on tcp over 127.0.0.1.
inline const char* TestVerbsIp() {
  const char* ip = std::getenv("RPMA_TEST_VERBS_IP");
  return ip != nullptr && *ip != '\0' ? ip : nullptr;
}
inline const char* const kAddr =
    TestVerbsIp() != nullptr ? TestVerbsIp() : "127.0.0.1";

// The provider of the API suites: verbs with RPMA_TEST_VERBS_IP, else tcp.
inline void UseTestProvider() {
  setenv("RPMA_PROVIDER", TestVerbsIp() != nullptr ? "verbs" : "tcp", 1);
}
// For tests of the tcp provider itself (device modes, the fake provider).
inline void UseTcp() { setenv("RPMA_PROVIDER", "tcp", 1); }

// A port in 20000-29999 from the pid and a per-test index.
inline std::string Port(int index) {
  static int salt = 0;
  int p =
      20000 + (static_cast<int>(getpid()) * 13 + index * 101 + salt++) % 10000;
  return std::to_string(p);
}

// Waits up to timeout_ms for fd to become readable.
inline bool Readable(int fd, int timeout_ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  return poll(&pfd, 1, timeout_ms) == 1;
}

// A peer on the tcp provider's context for 127.0.0.1.
class PeerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    UseTestProvider();
    ASSERT_EQ(
        rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx_),
        0);
    ASSERT_EQ(rpma_peer_new(ctx_, &peer_), 0);
  }
  void TearDown() override {
    if (peer_ != nullptr) {
      EXPECT_EQ(rpma_peer_delete(&peer_), 0);
    }
  }
  struct ibv_context* ctx_ = nullptr;
  struct rpma_peer* peer_ = nullptr;
};

// Waits (bounded) for the next event of conn.
inline int NextEvent(struct rpma_conn* conn, enum rpma_conn_event* ev,
                     int timeout_ms = 5000) {
  int fd = -1;
  int rc = rpma_conn_get_event_fd(conn, &fd);
  if (rc != 0) return rc;
  if (!Readable(fd, timeout_ms)) return RPMA_E_NO_EVENT;
  return rpma_conn_next_event(conn, ev);
}

// A server endpoint and a client connection to it, both in this process
// and on the same peer, established (both sides saw ESTABLISHED).
class ConnPairFixture : public PeerFixture {
 protected:
  void SetUp() override {
    PeerFixture::SetUp();
    if (HasFatalFailure()) return;
    Connect(ClientCfg(), ServerCfg());
  }
  // Configurations of the two sides (nullptr: librpma's defaults).
  virtual const struct rpma_conn_cfg* ClientCfg() { return nullptr; }
  virtual const struct rpma_conn_cfg* ServerCfg() { return nullptr; }
  void Connect(const struct rpma_conn_cfg* client_cfg,
               const struct rpma_conn_cfg* server_cfg) {
    port_ = Port(1);
    ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
    struct rpma_conn_req* creq = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), client_cfg, &creq),
              0);
    ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client_), 0);
    int epfd = -1;
    ASSERT_EQ(rpma_ep_get_fd(ep_, &epfd), 0);
    ASSERT_TRUE(Readable(epfd, 5000)) << "no connection request arrived";
    struct rpma_conn_req* sreq = nullptr;
    ASSERT_EQ(rpma_ep_next_conn_req(ep_, server_cfg, &sreq), 0);
    ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server_), 0);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(NextEvent(client_, &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
    ASSERT_EQ(NextEvent(server_, &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  }
  // Disconnects and deletes both connections (idempotent).
  void CloseConns() {
    if (client_ != nullptr) {
      (void)rpma_conn_disconnect(client_);
      EXPECT_EQ(rpma_conn_delete(&client_), 0);
    }
    if (server_ != nullptr) {
      (void)rpma_conn_disconnect(server_);
      EXPECT_EQ(rpma_conn_delete(&server_), 0);
    }
  }
  void TearDown() override {
    CloseConns();
    if (ep_ != nullptr) {
      EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
    }
    PeerFixture::TearDown();
  }
  std::string port_;
  struct rpma_ep* ep_ = nullptr;
  struct rpma_conn* client_ = nullptr;
  struct rpma_conn* server_ = nullptr;
};

}  // namespace rpma_test

#endif  // RPMA_TESTS_API_API_TEST_UTIL_H_
