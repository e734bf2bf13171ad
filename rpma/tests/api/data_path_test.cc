// The data path: the synchronous checks of every operation (each
// documented error), completion fields, flush/atomic emulation, immediate
// data, queue limits, on an in-process connection over 127.0.0.1.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "api_test_util.h"
#include "conn_fixture.h"
#include "librpma.h"

namespace {

using rpma_test::ConnPairFixture;
using rpma_test::ConnTest;

TEST_F(ConnTest, ReadAndWriteRejectZeroFlagsAndHalfNullPairs) {
  const int f = RPMA_F_COMPLETION_ALWAYS;
  EXPECT_EQ(rpma_read(client_, local_, 0, remote_, 0, 8, 0, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_read(client_, nullptr, 0, remote_, 0, 8, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_read(client_, local_, 0, nullptr, 0, 8, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_read(client_, nullptr, 1, nullptr, 0, 0, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_read(client_, nullptr, 0, nullptr, 1, 0, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_read(client_, nullptr, 0, nullptr, 0, 1, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write(client_, remote_, 0, local_, 0, 8, 0, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write(client_, nullptr, 0, local_, 0, 8, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write(client_, remote_, 0, nullptr, 0, 8, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_write(client_, nullptr, 0, nullptr, 0, 1, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(
      rpma_write_with_imm(client_, remote_, 0, local_, 0, 8, 0, 1, nullptr),
      RPMA_E_INVAL);
  EXPECT_EQ(
      rpma_write_with_imm(client_, nullptr, 0, local_, 0, 8, f, 1, nullptr),
      RPMA_E_INVAL);
  EXPECT_EQ(
      rpma_write_with_imm(client_, remote_, 0, nullptr, 0, 8, f, 1, nullptr),
      RPMA_E_INVAL);
}

TEST_F(ConnTest, SendAndRecvRejectZeroFlagsAndNullWithLength) {
  const int f = RPMA_F_COMPLETION_ALWAYS;
  EXPECT_EQ(rpma_send(client_, local_, 0, 8, 0, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_send(client_, nullptr, 1, 0, f, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_send(client_, nullptr, 0, 1, f, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_send_with_imm(client_, local_, 0, 8, 0, 1, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_send_with_imm(client_, nullptr, 0, 1, f, 1, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_recv(client_, nullptr, 1, 0, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_recv(client_, nullptr, 0, 1, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnTest, AtomicWriteChecksArgumentsAndAlignment) {
  const int f = RPMA_F_COMPLETION_ALWAYS;
  char src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(rpma_atomic_write(client_, nullptr, 0, src, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_atomic_write(client_, remote_, 0, nullptr, f, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_atomic_write(client_, remote_, 0, src, 0, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_atomic_write(client_, remote_, 4, src, f, nullptr),
            RPMA_E_INVAL);
}

TEST_F(ConnTest, FlushChecksArguments) {
  EXPECT_EQ(rpma_flush(client_, nullptr, 0, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_flush(client_, remote_, 0, 8, RPMA_FLUSH_TYPE_VISIBILITY, 0,
                       nullptr),
            RPMA_E_INVAL);
}

TEST_F(ConnTest, PersistentFlushNeedsDirectWriteToPmem) {
  // remote_ lacks FLUSH_TYPE_PERSISTENT too, but the peer_cfg gate is
  // checked first.
  EXPECT_EQ(rpma_flush(client_, remote_, 0, 8, RPMA_FLUSH_TYPE_PERSISTENT,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_NOSUPP);
}

TEST_F(ConnTest, FlushNeedsTheRegionsFlushUsage) {
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), 0);
  ASSERT_EQ(rpma_conn_apply_remote_peer_cfg(client_, pcfg), 0);
  rpma_peer_cfg_delete(&pcfg);
  // remote_ has VISIBILITY only.
  EXPECT_EQ(rpma_flush(client_, remote_, 0, 8, RPMA_FLUSH_TYPE_PERSISTENT,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_NOSUPP);
  uint8_t desc[21];
  ASSERT_EQ(rpma_mr_get_descriptor(server_mr_, desc), 0);
  desc[20] = RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
  struct rpma_mr_remote* persistent_only = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &persistent_only), 0);
  EXPECT_EQ(
      rpma_flush(client_, persistent_only, 0, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                 RPMA_F_COMPLETION_ALWAYS, nullptr),
      RPMA_E_NOSUPP);
  rpma_mr_remote_delete(&persistent_only);
}

TEST_F(ConnTest, WriteFlushReadRoundTripWithCompletionFields) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  uint32_t qp = 0;
  ASSERT_EQ(rpma_conn_get_qp_num(client_, &qp), 0);
  std::memcpy(client_buf_.data(), "persistent hello", 17);
  int ctx_w = 0, ctx_f = 0, ctx_r = 0;
  ASSERT_EQ(rpma_write(client_, remote_, 100, local_, 0, 17,
                       RPMA_F_COMPLETION_ALWAYS, &ctx_w),
            0);
  ASSERT_EQ(rpma_flush(client_, remote_, 100, 17, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, &ctx_f),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&ctx_w));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc.qp_num, qp);
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&ctx_f));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);  // read-after-write flush
  EXPECT_STREQ(server_buf_.data() + 100, "persistent hello");

  ASSERT_EQ(rpma_read(client_, local_, 1000, remote_, 100, 17,
                      RPMA_F_COMPLETION_ALWAYS, &ctx_r),
            0);
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&ctx_r));
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc.byte_len, 17u);
  EXPECT_STREQ(client_buf_.data() + 1000, "persistent hello");
}

TEST_F(ConnTest, OnErrorOnlyGivesNoCompletionOnSuccess) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  ASSERT_EQ(rpma_write(client_, remote_, 0, local_, 0, 8,
                       RPMA_F_COMPLETION_ON_ERROR, nullptr),
            0);
  int marker = 0;
  ASSERT_EQ(rpma_read(client_, local_, 8, remote_, 0, 8,
                      RPMA_F_COMPLETION_ALWAYS, &marker),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&marker))
      << "the unsignaled write completed";
}

TEST_F(ConnTest, AtomicWriteLandsAndCompletesAsWrite) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  char src[8] = {'a', 't', 'o', 'm', 'i', 'c', '!', '\0'};
  ASSERT_EQ(rpma_atomic_write(client_, remote_, 64, src,
                              RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  std::memset(src, 0, sizeof(src));  // copied at post time
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  // Make it visible to this (target) CPU before looking.
  ASSERT_EQ(rpma_flush(client_, remote_, 64, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_STREQ(server_buf_.data() + 64, "atomic!");
}

TEST_F(ConnTest, SendWithImmArrivesInNetworkOrder) {
  struct rpma_cq* scq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(server_, &scq), 0);
  int rctx = 0;
  ASSERT_EQ(rpma_recv(server_, server_mr_, 0, 64, &rctx), 0);
  std::memcpy(client_buf_.data(), "ping", 5);
  ASSERT_EQ(rpma_send_with_imm(client_, local_, 0, 5, RPMA_F_COMPLETION_ALWAYS,
                               0x01020304, nullptr),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(scq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&rctx));
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, 5u);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc.imm_data), 0x01020304u);
  uint32_t sqp = 0;
  ASSERT_EQ(rpma_conn_get_qp_num(server_, &sqp), 0);
  EXPECT_EQ(wc.qp_num, sqp);
  EXPECT_STREQ(server_buf_.data(), "ping");
  struct rpma_cq* ccq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &ccq), 0);
  ASSERT_EQ(WaitWc(ccq, &wc), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

TEST_F(ConnTest, WriteWithImmConsumesReceiveAtPeer) {
  struct rpma_cq* scq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(server_, &scq), 0);
  ASSERT_EQ(rpma_recv(server_, nullptr, 0, 0, nullptr), 0);
  std::memcpy(client_buf_.data(), "imm", 4);
  ASSERT_EQ(rpma_write_with_imm(client_, remote_, 200, local_, 0, 4,
                                RPMA_F_COMPLETION_ALWAYS, 77, nullptr),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(scq, &wc), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(wc.byte_len, 4u);  // the written length (mlx5, rxe)
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(wc.imm_data), 77u);
  EXPECT_STREQ(server_buf_.data() + 200, "imm");
}

TEST_F(ConnTest, CqFdBecomesReadableAndWaitRearms) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  int fd = -1;
  ASSERT_EQ(rpma_cq_get_fd(cq, &fd), 0);
  ASSERT_EQ(rpma_read(client_, local_, 0, remote_, 0, 8,
                      RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_TRUE(rpma_test::Readable(fd, 5000));
  ASSERT_EQ(rpma_cq_wait(cq), 0);
  struct ibv_wc wc;
  int got = 0;
  ASSERT_EQ(rpma_cq_get_wc(cq, 1, &wc, &got), 0);
  EXPECT_EQ(got, 1);
  ASSERT_EQ(rpma_read(client_, local_, 0, remote_, 0, 8,
                      RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  EXPECT_TRUE(rpma_test::Readable(fd, 5000)) << "CQ not re-armed";
}

TEST_F(ConnTest, EmptyReadAndEmptySendArePosted) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  ASSERT_EQ(rpma_recv(server_, nullptr, 0, 0, nullptr), 0);
  ASSERT_EQ(rpma_read(client_, nullptr, 0, nullptr, 0, 0,
                      RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_EQ(
      rpma_send(client_, nullptr, 0, 0, RPMA_F_COMPLETION_ALWAYS, nullptr), 0);
  struct ibv_wc wc[2];
  int got = 0, total = 0;
  for (int i = 0; i < 500 && total < 2; i++) {
    int rc = rpma_cq_get_wc(cq, 2 - total, wc + total, &got);
    if (rc == 0) {
      total += got;
    } else {
      ASSERT_EQ(rc, RPMA_E_NO_COMPLETION);
      usleep(10000);
    }
  }
  ASSERT_EQ(total, 2);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc[1].opcode, IBV_WC_SEND);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
}

TEST_F(ConnTest, WriteOutsideTheRemoteRegionCompletesWithAccessError) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  int ctx = 0;
  // No synchronous bounds check (librpma leaves it to the NIC).
  ASSERT_EQ(rpma_write(client_, remote_, server_buf_.size() - 4, local_, 0, 64,
                       RPMA_F_COMPLETION_ON_ERROR, &ctx),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.wr_id, reinterpret_cast<uintptr_t>(&ctx));
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
}

// librpma's defaults (CQ 10, SQ 10, RQ 10, no receive CQ): 10 completed
// sends and 10 receives flushed at disconnect all land on the one CQ, which
// must hold them (an overrun is fatal on hardware and in strict mode).
TEST_F(ConnTest, DefaultQueuesNeverOverrunTheirCompletionQueue) {
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  for (int i = 0; i < 10; i++)
    ASSERT_EQ(rpma_recv(client_, local_, 64 * i, 64, nullptr), 0);
  for (int i = 0; i < 10; i++)
    ASSERT_EQ(rpma_read(client_, local_, 2048 + 8 * i, remote_, 0, 8,
                        RPMA_F_COMPLETION_ALWAYS, nullptr),
              0);
  usleep(100000);  // let the reads complete, unpolled
  ASSERT_EQ(rpma_conn_disconnect(client_), 0);  // flushes the receives
  int ok = 0, flushed = 0;
  for (int i = 0; i < 500 && ok + flushed < 20; i++) {
    struct ibv_wc wc[20];
    int got = 0;
    int rc = rpma_cq_get_wc(cq, 20, wc, &got);
    if (rc == RPMA_E_NO_COMPLETION) {
      usleep(10000);
      continue;
    }
    ASSERT_EQ(rc, 0) << "the CQ overran";
    for (int j = 0; j < got; j++) {
      if (wc[j].status == IBV_WC_SUCCESS) ok++;
      if (wc[j].status == IBV_WC_WR_FLUSH_ERR) flushed++;
    }
  }
  EXPECT_EQ(ok, 10);
  EXPECT_EQ(flushed, 10);
}

// sq_size 2 on the client: unsignaled writes keep their slots.
class SmallSqTest : public ConnTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0);
    ASSERT_EQ(rpma_conn_cfg_set_sq_size(cfg_, 2), 0);
    ConnTest::SetUp();
  }
  void TearDown() override {
    ConnTest::TearDown();
    rpma_conn_cfg_delete(&cfg_);
  }
  const struct rpma_conn_cfg* ClientCfg() override { return cfg_; }
  struct rpma_conn_cfg* cfg_ = nullptr;
};

// Devices round queue sizes up (mlx5 to a power of two), so the post that
// fails is somewhere past sq_size, not exactly at it.
TEST_F(SmallSqTest, UnsignaledPostsBeyondSendQueueAreProviderErrors) {
  const int f = RPMA_F_COMPLETION_ON_ERROR;
  int posted = 0;
  int rc = 0;
  while (posted < 64 && (rc = rpma_write(client_, remote_, 8 * (posted % 8),
                                         local_, 0, 8, f, nullptr)) == 0)
    posted++;
  EXPECT_GE(posted, 2);  // at least sq_size fit
  EXPECT_LT(posted, 64) << "unsignaled writes never filled the send queue";
  EXPECT_EQ(rc, RPMA_E_PROVIDER);
}

}  // namespace
