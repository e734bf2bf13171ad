// Completion routing: separate receive CQ, shared completion channel with
// rpma_conn_wait, and an SRQ (with its own receive CQ) under connections.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "api_test_util.h"
#include "librpma.h"

namespace {

using rpma_test::ConnPairFixture;
using rpma_test::Readable;

// Both sides: rcq_size 5 and a shared completion channel.
class SharedChannelTest : public ConnPairFixture {
 protected:
  void SetUp() override {
    ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0);
    ASSERT_EQ(rpma_conn_cfg_set_rcq_size(cfg_, 5), 0);
    ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg_, true), 0);
    ConnPairFixture::SetUp();
    if (HasFatalFailure()) return;
    buf_.assign(256, 0);
    ASSERT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                          RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr_),
              0);
  }
  void TearDown() override {
    CloseConns();
    rpma_mr_dereg(&mr_);
    rpma_conn_cfg_delete(&cfg_);
    ConnPairFixture::TearDown();
  }
  const struct rpma_conn_cfg* ClientCfg() override { return cfg_; }
  const struct rpma_conn_cfg* ServerCfg() override { return cfg_; }
  struct rpma_conn_cfg* cfg_ = nullptr;
  std::vector<char> buf_;
  struct rpma_mr_local* mr_ = nullptr;
};

TEST_F(SharedChannelTest, CqWaitRefusesSharedChannel) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_SHARED_CHANNEL);
}

TEST_F(SharedChannelTest, CqAndRcqShareTheComplFd) {
  int compl_fd = -1, cq_fd = -2, rcq_fd = -3;
  ASSERT_EQ(rpma_conn_get_compl_fd(server_, &compl_fd), 0);
  struct rpma_cq* cq = nullptr;
  struct rpma_cq* rcq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(server_, &cq), 0);
  ASSERT_EQ(rpma_conn_get_rcq(server_, &rcq), 0);
  ASSERT_NE(rcq, nullptr);
  ASSERT_EQ(rpma_cq_get_fd(cq, &cq_fd), 0);
  ASSERT_EQ(rpma_cq_get_fd(rcq, &rcq_fd), 0);
  EXPECT_EQ(compl_fd, cq_fd);
  EXPECT_EQ(compl_fd, rcq_fd);
}

TEST_F(SharedChannelTest, ConnWaitTellsWhichCqFired) {
  ASSERT_EQ(rpma_recv(server_, mr_, 0, 64, nullptr), 0);
  std::memcpy(buf_.data() + 128, "msg", 4);
  ASSERT_EQ(rpma_send(client_, mr_, 128, 4, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  int fd = -1;
  ASSERT_EQ(rpma_conn_get_compl_fd(server_, &fd), 0);
  ASSERT_TRUE(Readable(fd, 5000));
  struct rpma_cq* cq = nullptr;
  bool is_rcq = false;
  ASSERT_EQ(rpma_conn_wait(server_, 0, &cq, &is_rcq), 0);
  struct rpma_cq* rcq = nullptr;
  ASSERT_EQ(rpma_conn_get_rcq(server_, &rcq), 0);
  EXPECT_EQ(cq, rcq);
  EXPECT_TRUE(is_rcq);
  struct ibv_wc wc;
  ASSERT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);

  // The sender's completion goes to the sender's main CQ.
  ASSERT_EQ(rpma_conn_get_compl_fd(client_, &fd), 0);
  ASSERT_TRUE(Readable(fd, 5000));
  ASSERT_EQ(rpma_conn_wait(client_, 0, &cq, nullptr), 0);
  struct rpma_cq* main_cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &main_cq), 0);
  EXPECT_EQ(cq, main_cq);
  ASSERT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

// Server connections take receives from one SRQ that has its own RCQ.
class SrqTest : public ConnPairFixture {
 protected:
  void SetUp() override {
    rpma_test::UseTestProvider();
    // The SRQ needs the peer: build it after PeerFixture, before Connect.
    PeerFixture::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq_), 0);
    ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0);
    ASSERT_EQ(rpma_conn_cfg_set_srq(cfg_, srq_), 0);
    ASSERT_EQ(rpma_conn_cfg_set_rcq_size(cfg_, 5), 0);  // ignored
    Connect(nullptr, cfg_);
    if (HasFatalFailure()) return;
    buf_.assign(256, 0);
    ASSERT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                          RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr_),
              0);
  }
  void TearDown() override {
    CloseConns();  // connections before the SRQ, the SRQ before the peer
    EXPECT_EQ(rpma_srq_delete(&srq_), 0);
    rpma_mr_dereg(&mr_);
    rpma_conn_cfg_delete(&cfg_);
    ConnPairFixture::TearDown();
  }
  struct rpma_srq* srq_ = nullptr;
  struct rpma_conn_cfg* cfg_ = nullptr;
  std::vector<char> buf_;
  struct rpma_mr_local* mr_ = nullptr;
};

TEST_F(SrqTest, ReceivesLandInTheSrqsCqWithTheConnectionsQpNum) {
  struct rpma_cq* rcq = reinterpret_cast<struct rpma_cq*>(0x1);
  ASSERT_EQ(rpma_conn_get_rcq(server_, &rcq), 0);
  EXPECT_EQ(rcq, nullptr) << "an SRQ with an RCQ leaves the conn without one";
  struct rpma_cq* srq_rcq = nullptr;
  ASSERT_EQ(rpma_srq_get_rcq(srq_, &srq_rcq), 0);
  ASSERT_NE(srq_rcq, nullptr);
  ASSERT_EQ(rpma_srq_recv(srq_, mr_, 0, 64, nullptr), 0);
  std::memcpy(buf_.data() + 128, "via srq", 8);
  ASSERT_EQ(rpma_send(client_, mr_, 128, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  int fd = -1;
  ASSERT_EQ(rpma_cq_get_fd(srq_rcq, &fd), 0);
  ASSERT_TRUE(Readable(fd, 5000));
  ASSERT_EQ(rpma_cq_wait(srq_rcq), 0);
  struct ibv_wc wc;
  ASSERT_EQ(rpma_cq_get_wc(srq_rcq, 1, &wc, nullptr), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  uint32_t qp = 0;
  ASSERT_EQ(rpma_conn_get_qp_num(server_, &qp), 0);
  EXPECT_EQ(wc.qp_num, qp);
  EXPECT_STREQ(buf_.data(), "via srq");
}

// rcq_size 5 without a shared channel: receives go only to the RCQ.
class ReceiveCqTest : public ConnPairFixture {
 protected:
  void SetUp() override {
    ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0);
    ASSERT_EQ(rpma_conn_cfg_set_rcq_size(cfg_, 5), 0);
    ConnPairFixture::SetUp();
    if (HasFatalFailure()) return;
    buf_.assign(256, 0);
    ASSERT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                          RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr_),
              0);
  }
  void TearDown() override {
    CloseConns();
    rpma_mr_dereg(&mr_);
    rpma_conn_cfg_delete(&cfg_);
    ConnPairFixture::TearDown();
  }
  const struct rpma_conn_cfg* ServerCfg() override { return cfg_; }
  struct rpma_conn_cfg* cfg_ = nullptr;
  std::vector<char> buf_;
  struct rpma_mr_local* mr_ = nullptr;
};

TEST_F(ReceiveCqTest, ReceivesGoOnlyToTheReceiveCq) {
  struct rpma_cq* cq = nullptr;
  struct rpma_cq* rcq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(server_, &cq), 0);
  ASSERT_EQ(rpma_conn_get_rcq(server_, &rcq), 0);
  ASSERT_NE(rcq, nullptr);
  int cq_fd = -1, rcq_fd = -1;
  ASSERT_EQ(rpma_cq_get_fd(cq, &cq_fd), 0);
  ASSERT_EQ(rpma_cq_get_fd(rcq, &rcq_fd), 0);
  EXPECT_NE(cq_fd, rcq_fd) << "not shared: each CQ has its own channel";
  ASSERT_EQ(rpma_recv(server_, mr_, 0, 64, nullptr), 0);
  ASSERT_EQ(rpma_send(client_, mr_, 128, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_TRUE(Readable(rcq_fd, 5000));
  ASSERT_EQ(rpma_cq_wait(rcq), 0);
  struct ibv_wc wc;
  ASSERT_EQ(rpma_cq_get_wc(rcq, 1, &wc, nullptr), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(rpma_cq_get_wc(cq, 1, &wc, nullptr), RPMA_E_NO_COMPLETION);
}

TEST_F(ReceiveCqTest, ReceivePostedOnTheRequestServesTheFirstMessage) {
  // A fresh pair whose server posted its receive before accepting.
  CloseConns();
  struct rpma_conn_req* creq = nullptr;
  ASSERT_EQ(
      rpma_conn_req_new(peer_, rpma_test::kAddr, port_.c_str(), nullptr, &creq),
      0);
  ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client_), 0);
  int ep_fd = -1;
  ASSERT_EQ(rpma_ep_get_fd(ep_, &ep_fd), 0);
  ASSERT_TRUE(Readable(ep_fd, 5000));
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_EQ(rpma_ep_next_conn_req(ep_, cfg_, &sreq), 0);
  int ctx = 0;
  ASSERT_EQ(rpma_conn_req_recv(sreq, mr_, 0, 64, &ctx), 0);
  ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server_), 0);
  enum rpma_conn_event ev;
  ASSERT_EQ(rpma_test::NextEvent(client_, &ev), 0);
  ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  std::memcpy(buf_.data() + 128, "first", 6);
  ASSERT_EQ(rpma_send(client_, mr_, 128, 6, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  struct rpma_cq* rcq = nullptr;
  ASSERT_EQ(rpma_conn_get_rcq(server_, &rcq), 0);
  int fd = -1;
  ASSERT_EQ(rpma_cq_get_fd(rcq, &fd), 0);
  ASSERT_TRUE(Readable(fd, 5000));
  ASSERT_EQ(rpma_cq_wait(rcq), 0);
  struct ibv_wc wc;
  ASSERT_EQ(rpma_cq_get_wc(rcq, 1, &wc, nullptr), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&ctx));
  EXPECT_EQ(wc.byte_len, 6u);
  EXPECT_STREQ(buf_.data(), "first");
}

TEST_F(SrqTest, TwoConnectionsShareTheSrqAndAreToldApartByQpNum) {
  // A second client and its server connection on the same SRQ.
  struct rpma_conn_req* creq = nullptr;
  ASSERT_EQ(
      rpma_conn_req_new(peer_, rpma_test::kAddr, port_.c_str(), nullptr, &creq),
      0);
  struct rpma_conn* client2 = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client2), 0);
  int ep_fd = -1;
  ASSERT_EQ(rpma_ep_get_fd(ep_, &ep_fd), 0);
  ASSERT_TRUE(Readable(ep_fd, 5000));
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_EQ(rpma_ep_next_conn_req(ep_, cfg_, &sreq), 0);
  struct rpma_conn* server2 = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server2), 0);
  enum rpma_conn_event ev;
  ASSERT_EQ(rpma_test::NextEvent(client2, &ev), 0);
  ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);

  uint32_t qp1 = 0, qp2 = 0;
  ASSERT_EQ(rpma_conn_get_qp_num(server_, &qp1), 0);
  ASSERT_EQ(rpma_conn_get_qp_num(server2, &qp2), 0);
  EXPECT_NE(qp1, qp2);
  ASSERT_EQ(rpma_srq_recv(srq_, mr_, 0, 32, nullptr), 0);
  ASSERT_EQ(rpma_srq_recv(srq_, mr_, 32, 32, nullptr), 0);
  ASSERT_EQ(rpma_send(client_, mr_, 128, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_EQ(rpma_send(client2, mr_, 128, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  struct rpma_cq* srq_rcq = nullptr;
  ASSERT_EQ(rpma_srq_get_rcq(srq_, &srq_rcq), 0);
  bool seen1 = false, seen2 = false;
  for (int i = 0; i < 500 && !(seen1 && seen2); i++) {
    struct ibv_wc wc;
    int rc = rpma_cq_get_wc(srq_rcq, 1, &wc, nullptr);
    if (rc == RPMA_E_NO_COMPLETION) {
      usleep(10000);
      continue;
    }
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    seen1 |= wc.qp_num == qp1;
    seen2 |= wc.qp_num == qp2;
  }
  EXPECT_TRUE(seen1 && seen2);
  rpma_conn_disconnect(client2);
  EXPECT_EQ(rpma_conn_delete(&client2), 0);
  EXPECT_EQ(rpma_conn_delete(&server2), 0);
}

}  // namespace
