// conn getters, events and teardown, and every function's NULL checks.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "api_test_util.h"
#include "conn_fixture.h"
#include "librpma.h"

namespace {

using rpma_test::ConnPairFixture;
using rpma_test::ConnTest;

TEST(ConnNullTest, EveryFunctionRejectsNullConn) {
  int fd;
  uint32_t qp;
  struct rpma_cq* cq;
  bool b;
  enum rpma_conn_event ev;
  struct rpma_conn_private_data pd;
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  EXPECT_EQ(rpma_conn_get_event_fd(nullptr, &fd), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_next_event(nullptr, &ev), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_private_data(nullptr, &pd), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_apply_remote_peer_cfg(nullptr, pcfg), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_qp_num(nullptr, &qp), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_cq(nullptr, &cq), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_rcq(nullptr, &cq), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_compl_fd(nullptr, &fd), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_wait(nullptr, 0, &cq, &b), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_disconnect(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_delete(nullptr), RPMA_E_INVAL);
  struct rpma_conn* none = nullptr;
  EXPECT_EQ(rpma_conn_delete(&none), 0);
  char src[8] = {};
  EXPECT_EQ(rpma_read(nullptr, nullptr, 0, nullptr, 0, 0,
                      RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write(nullptr, nullptr, 0, nullptr, 0, 0,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write_with_imm(nullptr, nullptr, 0, nullptr, 0, 0,
                                RPMA_F_COMPLETION_ALWAYS, 1, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(
      rpma_send(nullptr, nullptr, 0, 0, RPMA_F_COMPLETION_ALWAYS, nullptr),
      RPMA_E_INVAL);
  EXPECT_EQ(rpma_send_with_imm(nullptr, nullptr, 0, 0, RPMA_F_COMPLETION_ALWAYS,
                               1, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_recv(nullptr, nullptr, 0, 0, nullptr), RPMA_E_INVAL);
  uint8_t desc[21] = {};
  desc[20] = RPMA_MR_USAGE_WRITE_DST;
  struct rpma_mr_remote* dst = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &dst), 0);
  EXPECT_EQ(rpma_atomic_write(nullptr, dst, 0, src, RPMA_F_COMPLETION_ALWAYS,
                              nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_flush(nullptr, dst, 0, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_INVAL);
  rpma_mr_remote_delete(&dst);
  rpma_peer_cfg_delete(&pcfg);
}

TEST(CqNullTest, EveryFunctionRejectsNullCq) {
  int fd;
  struct ibv_wc wc;
  int got;
  EXPECT_EQ(rpma_cq_get_fd(nullptr, &fd), RPMA_E_INVAL);
  EXPECT_EQ(rpma_cq_wait(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_cq_get_wc(nullptr, 1, &wc, &got), RPMA_E_INVAL);
}

TEST_F(ConnTest, GettersRejectNullOut) {
  EXPECT_EQ(rpma_conn_get_event_fd(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_next_event(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_private_data(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_apply_remote_peer_cfg(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_qp_num(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_cq(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_rcq(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_get_compl_fd(client_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_wait(client_, 0, nullptr, nullptr), RPMA_E_INVAL);
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  EXPECT_EQ(rpma_cq_get_fd(cq, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnTest, DefaultsHaveNoReceiveCqAndNoSharedChannel) {
  struct rpma_cq* rcq = reinterpret_cast<struct rpma_cq*>(0x1);
  ASSERT_EQ(rpma_conn_get_rcq(client_, &rcq), 0);
  EXPECT_EQ(rcq, nullptr);
  int fd = -1;
  EXPECT_EQ(rpma_conn_get_compl_fd(client_, &fd), RPMA_E_NOT_SHARED_CHNL);
  struct rpma_cq* cq = nullptr;
  EXPECT_EQ(rpma_conn_wait(client_, 0, &cq, nullptr), RPMA_E_NOT_SHARED_CHNL);
}

TEST_F(ConnTest, NextEventOnNonBlockingFdGivesNoEvent) {
  int fd = -1;
  ASSERT_EQ(rpma_conn_get_event_fd(client_, &fd), 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  enum rpma_conn_event ev;
  EXPECT_EQ(rpma_conn_next_event(client_, &ev), RPMA_E_NO_EVENT);
}

TEST_F(ConnTest, CqWaitOnNonBlockingFdGivesNoCompletion) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  int fd = -1;
  ASSERT_EQ(rpma_cq_get_fd(cq, &fd), 0);
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_NO_COMPLETION);
}

TEST_F(ConnTest, GetWcChecksArgumentsAndReportsNoCompletion) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  struct ibv_wc wc[2];
  int got = -1;
  EXPECT_EQ(rpma_cq_get_wc(cq, 0, wc, &got), RPMA_E_INVAL);
  EXPECT_EQ(rpma_cq_get_wc(cq, 1, nullptr, &got), RPMA_E_INVAL);
  EXPECT_EQ(rpma_cq_get_wc(cq, 2, wc, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_cq_get_wc(cq, 2, wc, &got), RPMA_E_NO_COMPLETION);
  EXPECT_EQ(got, -1) << "written on failure";
  EXPECT_EQ(rpma_cq_get_wc(cq, 1, wc, nullptr), RPMA_E_NO_COMPLETION);
}

TEST_F(ConnTest, DeleteAfterDisconnectWithoutWaitingNeverHangs) {
  ASSERT_EQ(rpma_conn_disconnect(client_), 0);
  EXPECT_EQ(rpma_conn_delete(&client_), 0);
  EXPECT_EQ(client_, nullptr);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(rpma_test::NextEvent(server_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
}

TEST_F(ConnTest, DeleteWithoutDisconnectClosesPeer) {
  EXPECT_EQ(rpma_conn_delete(&server_), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(rpma_test::NextEvent(client_, &ev), 0);
  EXPECT_TRUE(ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST)
      << rpma_utils_conn_event_2str(ev);
}

bool Strict() {
  const char* env = std::getenv("RPMA_TCP_STRICT");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

// The disconnect rule of IB/RoCE (provider.h), portable on every provider:
// the initiator's CLOSED follows the peer's own disconnect.
TEST_F(ConnTest, InitiatorIsClosedAfterThePeerAnswersTheDisconnect) {
  ASSERT_EQ(rpma_conn_disconnect(client_), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(rpma_test::NextEvent(server_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
  if (Strict()) {
    int fd = -1;
    ASSERT_EQ(rpma_conn_get_event_fd(client_, &fd), 0);
    EXPECT_FALSE(rpma_test::Readable(fd, 300))
        << "CLOSED before the peer disconnected (no NIC does that)";
  }
  ASSERT_EQ(rpma_conn_disconnect(server_), 0);
  ASSERT_EQ(rpma_test::NextEvent(client_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
  int fd = -1;
  ASSERT_EQ(rpma_conn_get_event_fd(server_, &fd), 0);
  EXPECT_FALSE(rpma_test::Readable(fd, 100)) << "a second event";
}

TEST_F(ConnTest, PeerDeletingItsConnectionAlsoAnswersTheDisconnect) {
  ASSERT_EQ(rpma_conn_disconnect(client_), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(rpma_test::NextEvent(server_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
  ASSERT_EQ(rpma_conn_delete(&server_), 0);
  ASSERT_EQ(rpma_test::NextEvent(client_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_CLOSED);
}

TEST_F(ConnTest, EndpointShutdownKeepsConnections) {
  ASSERT_EQ(rpma_ep_shutdown(&ep_), 0);
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  ASSERT_EQ(rpma_read(client_, local_, 0, remote_, 0, 8,
                      RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

}  // namespace
