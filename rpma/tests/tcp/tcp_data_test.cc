// Data path of the tcp provider: every opcode's completion, remote access
// violations, RC ordering, RNR, SRQ routing, queue sizes and channels.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tcp_data_fixture.h"

namespace rpma::prov::tcp_test {
namespace {

TEST_F(TcpDataTest, EveryOpcodeCompletesWithItsFields) {
  Qp* qp = p_.client.qp();
  for (int i = 0; i < 64; ++i) local_[i] = static_cast<uint8_t>(i + 1);

  ASSERT_EQ(qp->PostSend(Wr(Opcode::kWrite, 1, 128, 64)), 0);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc[0].qp_num, qp->qp_num());
  EXPECT_EQ(std::memcmp(target_.data() + 128, local_.data(), 64), 0);

  std::memset(local_.data(), 0, 64);
  SendWr rd = Wr(Opcode::kRead, 2, 128, 64);
  ASSERT_EQ(qp->PostSend(rd), 0);
  wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc[0].byte_len, 64u);
  EXPECT_EQ(std::memcmp(target_.data() + 128, local_.data(), 64), 0);

  SendWr aw = Wr(Opcode::kAtomicWrite, 3, 8, 0);
  aw.sge = {};
  const uint8_t val[8] = {9, 8, 7, 6, 5, 4, 3, 2};
  std::memcpy(aw.atomic_data, val, 8);
  ASSERT_EQ(qp->PostSend(aw), 0);
  wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(target_.data() + 8, val, 8), 0);

  for (FlushType t : {FlushType::kPersistent, FlushType::kVisibility}) {
    SendWr fl = Wr(Opcode::kFlush, 4, 0, 0);
    fl.sge = {};
    fl.flush_type = t;
    fl.flush_length = 4096;
    ASSERT_EQ(qp->PostSend(fl), 0);
    wc = PollN(p_.client.cq.get(), 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
  }

  // Zero-length read without any region (librpma's all-NULL form).
  SendWr z;
  z.opcode = Opcode::kRead;
  z.wr_id = 5;
  z.signaled = true;
  ASSERT_EQ(qp->PostSend(z), 0);
  wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);

  // Two-sided: send with immediate, then write with immediate.
  std::vector<uint8_t> rbuf(256, 0);
  RecvWr rv;
  rv.wr_id = 77;
  rv.sge = {rbuf.data(), 256, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  rv.wr_id = 78;
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  SendWr s = Wr(Opcode::kSendWithImm, 6, 0, 20);
  s.imm_data = htonl(0xabcd);
  ASSERT_EQ(qp->PostSend(s), 0);
  wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_SEND);
  auto rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].wr_id, 77u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rw[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(rw[0].byte_len, 20u);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(rw[0].imm_data, htonl(0xabcd));
  EXPECT_EQ(rw[0].qp_num, p_.server.qp()->qp_num());
  EXPECT_EQ(std::memcmp(rbuf.data(), local_.data(), 20), 0);

  SendWr wi = Wr(Opcode::kWriteWithImm, 7, 1024, 32);
  wi.imm_data = htonl(42);
  ASSERT_EQ(qp->PostSend(wi), 0);
  wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
  rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].wr_id, 78u);
  EXPECT_EQ(rw[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_TRUE(rw[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(rw[0].imm_data, htonl(42));
  EXPECT_EQ(std::memcmp(target_.data() + 1024, local_.data(), 32), 0);
}

TEST_F(TcpDataTest, UnsignaledSuccessIsSilent) {
  SendWr w = Wr(Opcode::kWrite, 1, 0, 8);
  w.signaled = false;
  ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kRead, 2, 0, 8)), 0);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(PollFor(p_.client.cq.get(), 50), 0);
}

struct Violation {
  const char* name;
  Opcode op;
  int bad;  // 0 rkey, 1 out of bounds, 2 missing access
};

class TcpViolationTest : public ::testing::TestWithParam<Violation> {};

TEST_P(TcpViolationTest, RemoteAccessErrorThenFlushErrors) {
  const Violation v = GetParam();
  Pair p;
  p.Connect();
  std::vector<uint8_t> target(4096, 0x11), local(4096, 0x22);
  std::unique_ptr<Mr> tmr, lmr;
  // The "missing access" region grants only what the op does not need.
  int access = kAll;
  if (v.bad == 2) {
    access = (v.op == Opcode::kRead) ? kAccessRemoteWrite : kAccessRemoteRead;
  }
  ASSERT_EQ(p.server.pd->RegMr(target.data(), target.size(), access, &tmr), 0);
  ASSERT_EQ(p.client.pd->RegMr(local.data(), local.size(), kAll, &lmr), 0);
  std::vector<uint8_t> rbuf(64);
  RecvWr rv;
  rv.wr_id = 500;
  rv.sge = {rbuf.data(), 64, 0};
  ASSERT_EQ(p.client.qp()->PostRecv(rv), 0);
  RecvWr srv = rv;
  srv.wr_id = 600;
  ASSERT_EQ(p.server.qp()->PostRecv(srv), 0);

  SendWr wr;
  wr.opcode = v.op;
  wr.wr_id = 1;
  wr.signaled = true;
  wr.sge = {local.data(), 64, lmr->lkey()};
  wr.remote_addr = reinterpret_cast<uint64_t>(target.data());
  wr.rkey = tmr->rkey();
  wr.flush_length = 64;
  if (v.op == Opcode::kAtomicWrite || v.op == Opcode::kFlush) wr.sge = {};
  if (v.bad == 0) wr.rkey ^= 0x5a5a5a5a;
  if (v.bad == 1) wr.remote_addr += 4096 - 32;
  ASSERT_EQ(p.client.qp()->PostSend(wr), 0);
  SendWr after = wr;
  after.opcode = Opcode::kWrite;
  after.wr_id = 2;
  after.sge = {local.data(), 8, lmr->lkey()};
  after.rkey = tmr->rkey();
  after.remote_addr = reinterpret_cast<uint64_t>(target.data());
  after.signaled = false;  // errors always complete
  ASSERT_EQ(p.client.qp()->PostSend(after), 0);

  auto wc = PollN(p.client.cq.get(), 3);
  ASSERT_EQ(wc.size(), 3u);
  // Order: the failing WR, the flushed one; the receive (other queue).
  std::vector<ibv_wc> sends, recvs;
  for (auto& w : wc) (w.wr_id >= 500 ? recvs : sends).push_back(w);
  ASSERT_EQ(sends.size(), 2u);
  EXPECT_EQ(sends[0].wr_id, 1u);
  EXPECT_EQ(sends[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(sends[1].wr_id, 2u);
  EXPECT_EQ(sends[1].status, IBV_WC_WR_FLUSH_ERR);
  ASSERT_EQ(recvs.size(), 1u);
  EXPECT_EQ(recvs[0].status, IBV_WC_WR_FLUSH_ERR);
  // Later WRs flush too.
  ASSERT_EQ(p.client.qp()->PostSend(after), 0);
  wc = PollN(p.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  // Target memory untouched, target QP failed too (its receive flushed),
  // and the target keeps serving CM.
  EXPECT_EQ(target, std::vector<uint8_t>(4096, 0x11));
  auto srw = PollN(p.server.cq.get(), 1);
  ASSERT_EQ(srw.size(), 1u);
  EXPECT_EQ(srw[0].status, IBV_WC_WR_FLUSH_ERR);
  ASSERT_EQ(p.client.id->Disconnect(), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.server.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

INSTANTIATE_TEST_SUITE_P(
    All, TcpViolationTest,
    ::testing::Values(Violation{"WriteBadRkey", Opcode::kWrite, 0},
                      Violation{"ReadBadRkey", Opcode::kRead, 0},
                      Violation{"WriteOutOfBounds", Opcode::kWrite, 1},
                      Violation{"ReadOutOfBounds", Opcode::kRead, 1},
                      Violation{"AtomicBadRkey", Opcode::kAtomicWrite, 0},
                      Violation{"WriteWithoutAccess", Opcode::kWrite, 2},
                      Violation{"ReadWithoutAccess", Opcode::kRead, 2},
                      Violation{"FlushWithoutAccess", Opcode::kFlush, 2},
                      Violation{"FlushOutOfBounds", Opcode::kFlush, 1}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(TcpDataTest, DeregisteredRegionIsNeverTouched) {
  SendWr w = Wr(Opcode::kWrite, 1, 0, 64);
  tmr_.reset();
  std::memset(local_.data(), 0xee, 64);
  ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(target_[0], 0);
}

TEST_F(TcpDataTest, WritesArePlacedBeforeALaterReceiveCompletes) {
  std::vector<uint8_t> big(1 << 20), tgt(1 << 20, 0);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  std::unique_ptr<Mr> bmr, tbmr;
  ASSERT_EQ(p_.client.pd->RegMr(big.data(), big.size(), kAll, &bmr), 0);
  ASSERT_EQ(p_.server.pd->RegMr(tgt.data(), tgt.size(), kAll, &tbmr), 0);
  RecvWr rv;
  rv.wr_id = 9;
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.sge = {big.data(), static_cast<uint32_t>(big.size()), bmr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(tgt.data());
  w.rkey = tbmr->rkey();
  ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  SendWr s;
  s.opcode = Opcode::kSend;
  s.signaled = true;
  ASSERT_EQ(p_.client.qp()->PostSend(s), 0);
  auto rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].byte_len, 0u);
  EXPECT_EQ(tgt, big);  // checked right at the receive completion
  EXPECT_EQ(PollN(p_.client.cq.get(), 1).size(), 1u);
}

TEST_F(TcpDataTest, FencedAtomicWriteFollowsFlushInOrder) {
  Qp* qp = p_.client.qp();
  std::memset(local_.data(), 0x33, 64);
  ASSERT_EQ(qp->PostSend(Wr(Opcode::kWrite, 1, 0, 64)), 0);
  SendWr fl = Wr(Opcode::kFlush, 2, 0, 0);
  fl.sge = {};
  fl.flush_length = 64;
  ASSERT_EQ(qp->PostSend(fl), 0);
  SendWr aw = Wr(Opcode::kAtomicWrite, 3, 64, 0);
  aw.sge = {};
  aw.fence = true;
  std::memset(aw.atomic_data, 0x44, 8);
  ASSERT_EQ(qp->PostSend(aw), 0);
  auto wc = PollN(p_.client.cq.get(), 3);
  ASSERT_EQ(wc.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(wc[i].wr_id, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(wc[i].status, IBV_WC_SUCCESS);
  }
  EXPECT_EQ(target_[63], 0x33);
  EXPECT_EQ(target_[64], 0x44);
}

TEST_F(TcpDataTest, SendWaitsForAReceiveInsteadOfBeingDropped) {
  std::memcpy(local_.data(), "ping", 4);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kSend, 1, 0, 4)), 0);
  EXPECT_EQ(PollFor(p_.server.cq.get(), 200), 0);
  EXPECT_EQ(PollFor(p_.client.cq.get(), 0), 0);  // not acked yet
  std::vector<uint8_t> rbuf(16, 0);
  RecvWr rv;
  rv.wr_id = 3;
  rv.sge = {rbuf.data(), 16, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  auto rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(rbuf.data(), "ping", 4), 0);
  EXPECT_EQ(PollN(p_.client.cq.get(), 1).size(), 1u);
}

TEST_F(TcpDataTest, RnrHoldsLaterRequestsButNotTheOtherDirection) {
  // Client: SEND (no receive at the server yet), then a WRITE behind it.
  std::memcpy(local_.data(), "msg!", 4);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kSend, 1, 0, 4)), 0);
  std::vector<uint8_t> big(256 * 1024, 0x3c);
  std::unique_ptr<Mr> bmr;
  ASSERT_EQ(p_.client.pd->RegMr(big.data(), big.size(), kAll, &bmr), 0);
  SendWr w = Wr(Opcode::kWrite, 2, 0, 0);
  w.sge = {big.data(), 4096, bmr->lkey()};
  ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  // Server: a READ of the client's memory completes although the client's
  // SEND still waits for a receive in the same byte stream.
  std::vector<uint8_t> sdst(big.size(), 0);
  std::unique_ptr<Mr> smr;
  ASSERT_EQ(p_.server.pd->RegMr(sdst.data(), sdst.size(), kAll, &smr), 0);
  SendWr r;
  r.opcode = Opcode::kRead;
  r.wr_id = 9;
  r.signaled = true;
  r.sge = {sdst.data(), static_cast<uint32_t>(sdst.size()), smr->lkey()};
  r.remote_addr = reinterpret_cast<uint64_t>(big.data());
  r.rkey = bmr->rkey();
  ASSERT_EQ(p_.server.qp()->PostSend(r), 0);
  auto sw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(sw.size(), 1u);
  EXPECT_EQ(sw[0].wr_id, 9u);
  EXPECT_EQ(sw[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(sdst, big);
  // The WRITE behind the blocked SEND has not been executed.
  EXPECT_EQ(target_[0], 0);
  EXPECT_EQ(PollFor(p_.client.cq.get(), 20), 0);
  std::vector<uint8_t> rbuf(16);
  RecvWr rv;
  rv.wr_id = 5;
  rv.sge = {rbuf.data(), 16, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  auto rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].wr_id, 5u);
  EXPECT_EQ(std::memcmp(rbuf.data(), "msg!", 4), 0);
  auto cw = PollN(p_.client.cq.get(), 2);
  ASSERT_EQ(cw.size(), 2u);
  EXPECT_EQ(cw[0].wr_id, 1u);
  EXPECT_EQ(cw[1].wr_id, 2u);
  EXPECT_EQ(target_[4095], 0x3c);
}

TEST_F(TcpDataTest, SendLargerThanTheReceiveFailsBothSides) {
  std::vector<uint8_t> rbuf(8, 0);
  RecvWr rv;
  rv.wr_id = 3;
  rv.sge = {rbuf.data(), 8, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kSend, 1, 0, 64)), 0);
  auto rw = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rw.size(), 1u);
  EXPECT_EQ(rw[0].status, IBV_WC_LOC_LEN_ERR);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
}

TEST_F(TcpDataTest, QueueSizesAreEnforced) {
  Pair p;
  p.Connect(/*sq=*/4, /*rq=*/2);
  std::unique_ptr<Mr> tmr;
  ASSERT_EQ(p.server.pd->RegMr(target_.data(), 64, kAll, &tmr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.sge = {local_.data(), 8, 0};
  w.remote_addr = reinterpret_cast<uint64_t>(target_.data());
  w.rkey = tmr->rkey();
  for (int i = 0; i < 4; ++i) ASSERT_EQ(p.client.qp()->PostSend(w), 0);
  // Unsignaled WRs keep their slots even after they executed.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(p.client.qp()->PostSend(w), -ENOMEM);

  RecvWr rv;
  ASSERT_EQ(p.client.qp()->PostRecv(rv), 0);
  ASSERT_EQ(p.client.qp()->PostRecv(rv), 0);
  EXPECT_EQ(p.client.qp()->PostRecv(rv), -ENOMEM);

  // A signaled WR frees all slots before it when it completes.
  Pair q;
  q.Connect(4, 2);
  std::unique_ptr<Mr> tmr2;
  ASSERT_EQ(q.server.pd->RegMr(target_.data(), 64, kAll, &tmr2), 0);
  w.rkey = tmr2->rkey();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(q.client.qp()->PostSend(w), 0);
  w.signaled = true;
  ASSERT_EQ(q.client.qp()->PostSend(w), 0);
  ASSERT_EQ(PollN(q.client.cq.get(), 1).size(), 1u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.client.qp()->PostSend(w), 0);
  EXPECT_EQ(PollN(q.client.cq.get(), 4).size(), 4u);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
