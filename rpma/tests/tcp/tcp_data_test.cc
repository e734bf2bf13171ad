// Data path of the tcp provider: every opcode's completion, remote access
// violations, RC ordering, RNR, SRQ routing, queue sizes and channels.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tcp_test_util.h"

namespace rpma::prov::tcp_test {
namespace {

constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite |
                     kAccessRemoteRead | kAccessFlushVisibility |
                     kAccessFlushPersistent;

class TcpDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    p_.Connect();
    ASSERT_EQ(p_.server.pd->RegMr(target_.data(), target_.size(), kAll, &tmr_),
              0);
    ASSERT_EQ(p_.client.pd->RegMr(local_.data(), local_.size(),
                                  kAccessLocalWrite, &lmr_),
              0);
  }
  void TearDown() override {
    tmr_.reset();
    lmr_.reset();
  }

  SendWr Wr(Opcode op, uint64_t wr_id, size_t off, uint32_t len) {
    SendWr wr;
    wr.opcode = op;
    wr.wr_id = wr_id;
    wr.signaled = true;
    wr.sge = {local_.data(), len, lmr_->lkey()};
    wr.remote_addr = reinterpret_cast<uint64_t>(target_.data()) + off;
    wr.rkey = tmr_->rkey();
    return wr;
  }

  Pair p_;
  std::vector<uint8_t> target_ = std::vector<uint8_t>(8192, 0);
  std::vector<uint8_t> local_ = std::vector<uint8_t>(8192, 0);
  std::unique_ptr<Mr> tmr_, lmr_;
};

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

TEST(TcpSrqTest, OneSrqServesSeveralQpsWithTheirQpNums) {
  constexpr int kClients = 3;
  Side server;
  server.Init();
  std::unique_ptr<CmChannel> lch;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Srq> srq;
  ASSERT_EQ(server.pd->CreateCmChannel(&lch), 0);
  ASSERT_EQ(server.pd->CreateSrq(16, &srq), 0);
  std::string port;
  ASSERT_EQ(ListenAny(server.pd.get(), lch.get(), &listener, &port), 0);
  std::vector<std::unique_ptr<Side>> clients;
  std::vector<std::unique_ptr<CmId>> sids;
  for (int i = 0; i < kClients; ++i) {
    auto c = std::make_unique<Side>();
    c->Init();
    ASSERT_EQ(c->pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &c->id),
              0);
    ASSERT_EQ(c->MakeQp(), 0);
    ASSERT_EQ(c->id->Migrate(c->ch.get()), 0);
    ASSERT_EQ(c->id->Connect(nullptr, 0), 0);
    CmEvent req;
    ASSERT_TRUE(NextEvent(lch.get(), &req));
    ASSERT_EQ(req.type, CmEventType::kConnectRequest);
    ASSERT_EQ(req.new_id->Migrate(server.ch.get()), 0);
    QpInit init;
    init.send_cq = server.cq.get();
    init.recv_cq = server.cq.get();
    init.srq = srq.get();
    ASSERT_EQ(req.new_id->CreateQp(init), 0);
    RecvWr bad;
    EXPECT_EQ(req.new_id->qp()->PostRecv(bad), -EINVAL);  // use the SRQ
    ASSERT_EQ(req.new_id->Accept(nullptr, 0), 0);
    CmEvent ev;
    ASSERT_TRUE(NextEvent(c->ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    sids.push_back(std::move(req.new_id));
    clients.push_back(std::move(c));
  }
  std::vector<uint8_t> bufs(kClients * 16, 0);
  for (int i = 0; i < kClients; ++i) {
    RecvWr rv;
    rv.wr_id = 100 + i;
    rv.sge = {bufs.data() + 16 * i, 16, 0};
    ASSERT_EQ(srq->PostRecv(rv), 0);
  }
  for (int i = kClients - 1; i >= 0; --i) {
    uint8_t msg = static_cast<uint8_t>(i + 1);
    SendWr s;
    s.opcode = Opcode::kSend;
    s.inline_data = true;
    s.sge = {&msg, 1, 0};
    ASSERT_EQ(clients[i]->qp()->PostSend(s), 0);
    auto rw = PollN(server.cq.get(), 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].qp_num, sids[i]->qp()->qp_num());
    EXPECT_EQ(rw[0].byte_len, 1u);
    EXPECT_EQ(bufs[16 * (rw[0].wr_id - 100)], msg);
  }
  sids.clear();
  clients.clear();
  listener.reset();
  lch.reset();
  srq.reset();
}

TEST_F(TcpDataTest, CompletionChannelFiresOnceWhenArmed) {
  Side& c = p_.client;
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(c.pd->CreateCompletionChannel(&ch), 0);
  std::unique_ptr<Cq> cq;
  ASSERT_EQ(c.pd->CreateCq(8, ch.get(), &cq), 0);
  int fl = fcntl(ch->fd(), F_GETFL);
  ASSERT_EQ(fcntl(ch->fd(), F_SETFL, fl | O_NONBLOCK), 0);
  Cq* got = nullptr;
  EXPECT_EQ(ch->GetEvent(&got), -EAGAIN);
  // A fresh connection whose send CQ is the channel's CQ.
  Pair p;
  p.Listen();
  p.client.Init();
  ASSERT_EQ(p.client.pd->CreateCq(8, ch.get(), &p.client.rcq), 0);
  ASSERT_EQ(p.client.pd->CreateActiveId("127.0.0.1", p.port.c_str(), 2000,
                                        &p.client.id),
            0);
  QpInit init;
  init.send_cq = p.client.rcq.get();
  init.recv_cq = p.client.rcq.get();
  ASSERT_EQ(p.client.id->CreateQp(init), 0);
  ASSERT_EQ(p.client.id->Migrate(p.client.ch.get()), 0);
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  ASSERT_EQ(p.client.rcq->RequestNotify(), 0);
  SendWr z;
  z.opcode = Opcode::kRead;
  z.signaled = true;
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  ASSERT_TRUE(WaitReadable(ch->fd(), 2000));
  ASSERT_EQ(ch->GetEvent(&got), 0);
  EXPECT_EQ(got, p.client.rcq.get());
  EXPECT_EQ(PollN(p.client.rcq.get(), 2).size(), 2u);
  EXPECT_EQ(ch->GetEvent(&got), -EAGAIN);  // armed once, fired once
  cq.reset();
  p.client.id.reset();
  p.server.id.reset();
  p.client.rcq.reset();
  ch.reset();
}

TEST_F(TcpDataTest, DeepQueuesCompleteInOrderWithTheirData) {
  // More than the immediate-send threshold in flight: later posts ride on
  // the engine's batched writes.
  Pair p;
  p.Connect(/*sq=*/128, /*rq=*/4);
  std::unique_ptr<Mr> tmr, lmr;
  for (size_t i = 0; i < target_.size(); ++i)
    target_[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(p.server.pd->RegMr(target_.data(), target_.size(), kAll, &tmr), 0);
  ASSERT_EQ(p.client.pd->RegMr(local_.data(), local_.size(), kAll, &lmr), 0);
  std::fill(local_.begin(), local_.end(), 0);
  uint64_t next = 0, done = 0;
  auto post = [&](uint64_t i) {
    SendWr w;
    w.opcode = Opcode::kRead;
    w.wr_id = i;
    w.signaled = true;
    size_t slot = i % 128;
    w.sge = {local_.data() + slot * 64, 64, lmr->lkey()};
    w.remote_addr = reinterpret_cast<uint64_t>(target_.data()) + slot * 64;
    w.rkey = tmr->rkey();
    return p.client.qp()->PostSend(w);
  };
  for (; next < 100; ++next) ASSERT_EQ(post(next), 0);
  int64_t end = NowMs() + 10000;
  while (done < 5000 && NowMs() < end) {
    ibv_wc wc[32];
    int n = p.client.cq->Poll(32, wc);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(wc[i].status, IBV_WC_SUCCESS);
      ASSERT_EQ(wc[i].wr_id, done);  // RC: completions in posting order
      ++done;
      if (next < 5000) {
        ASSERT_EQ(post(next++), 0);
      }
    }
  }
  EXPECT_EQ(done, 5000u);
  EXPECT_EQ(std::memcmp(local_.data(), target_.data(), 128 * 64), 0);
}

TEST(TcpMtTest, ManyConnectionsOfOnePeerFromManyThreads) {
  constexpr int kThreads = 4;
  Side server;
  server.Init();
  std::unique_ptr<CmChannel> lch;
  std::unique_ptr<Listener> listener;
  ASSERT_EQ(server.pd->CreateCmChannel(&lch), 0);
  std::string port;
  ASSERT_EQ(ListenAny(server.pd.get(), lch.get(), &listener, &port), 0);
  std::vector<uint8_t> target(kThreads * 4096, 0);
  std::unique_ptr<Mr> tmr;
  ASSERT_EQ(server.pd->RegMr(target.data(), target.size(), kAll, &tmr), 0);
  // The server accepts everything from its own thread.
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<CmId>> sids;
  std::unique_ptr<Cq> scq;
  ASSERT_EQ(server.pd->CreateCq(256, nullptr, &scq), 0);
  std::thread acceptor([&] {
    while (!stop) {
      CmEvent req;
      if (!NextEvent(lch.get(), &req, 100)) continue;
      if (req.type != CmEventType::kConnectRequest) continue;
      QpInit init;
      init.send_cq = scq.get();
      init.recv_cq = scq.get();
      if (req.new_id->CreateQp(init) == 0 &&
          req.new_id->Migrate(server.ch.get()) == 0 &&
          req.new_id->Accept(nullptr, 0) == 0) {
        sids.push_back(std::move(req.new_id));
      }
    }
  });
  // One client Pd (one peer), a connection per thread.
  std::unique_ptr<Pd> cpd;
  ASSERT_EQ(Dev()->AllocPd(&cpd), 0);
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::unique_ptr<CmChannel> ch;
      std::unique_ptr<Cq> cq;
      std::unique_ptr<CmId> id;
      std::vector<uint8_t> buf(4096, static_cast<uint8_t>(t + 1));
      std::unique_ptr<Mr> mr;
      if (cpd->CreateCmChannel(&ch) || cpd->CreateCq(64, nullptr, &cq) ||
          cpd->RegMr(buf.data(), buf.size(), kAll, &mr) ||
          cpd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &id)) {
        return;
      }
      QpInit init;
      init.send_cq = cq.get();
      init.recv_cq = cq.get();
      CmEvent ev;
      if (id->CreateQp(init) || id->Migrate(ch.get()) ||
          id->Connect(nullptr, 0) || !NextEvent(ch.get(), &ev) ||
          ev.type != CmEventType::kEstablished) {
        return;
      }
      int good = 0;
      for (int i = 0; i < 200; ++i) {
        SendWr w;
        w.opcode = (i % 2) ? Opcode::kRead : Opcode::kWrite;
        w.signaled = true;
        w.sge = {buf.data(), 4096, mr->lkey()};
        w.remote_addr = reinterpret_cast<uint64_t>(target.data()) + t * 4096;
        w.rkey = tmr->rkey();
        if (id->qp()->PostSend(w) != 0) break;
        auto wc = PollN(cq.get(), 1);
        if (wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS) ++good;
      }
      if (good == 200 &&
          buf == std::vector<uint8_t>(4096, static_cast<uint8_t>(t + 1))) {
        ++ok;
      }
      id.reset();
      mr.reset();
    });
  }
  for (auto& t : ts) t.join();
  stop = true;
  acceptor.join();
  EXPECT_EQ(ok.load(), kThreads);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(target[t * 4096 + 4095], t + 1);
  }
  sids.clear();
  cpd.reset();
  tmr.reset();
  scq.reset();
  listener.reset();
  lch.reset();
}

TEST_F(TcpDataTest, DeregistrationDuringRemoteReadsIsSafe) {
  // Reads stream while the target deregisters: each completes either
  // successfully or with an error/flush; the target never faults.
  constexpr size_t kLen = 4 << 20;
  void* big = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(big, MAP_FAILED);
  std::memset(big, 0x5c, kLen);
  std::vector<uint8_t> dst(kLen);
  std::unique_ptr<Mr> bmr, dmr;
  ASSERT_EQ(p_.server.pd->RegMr(big, kLen, kAll, &bmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(dst.data(), dst.size(), kAll, &dmr), 0);
  SendWr w;
  w.opcode = Opcode::kRead;
  w.signaled = true;
  w.sge = {dst.data(), static_cast<uint32_t>(dst.size()), dmr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(big);
  w.rkey = bmr->rkey();
  for (int i = 0; i < 8; ++i) {
    w.wr_id = i;
    ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bmr.reset();
  // Unmapped: any access by the engine after deregistration would fault.
  ASSERT_EQ(munmap(big, kLen), 0);
  auto wc = PollN(p_.client.cq.get(), 8, 10000);
  EXPECT_EQ(wc.size(), 8u);
}

TEST_F(TcpDataTest, BlockingCompletionEventWakesUp) {
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(p_.client.pd->CreateCompletionChannel(&ch), 0);
  std::unique_ptr<Cq> rcq;
  ASSERT_EQ(p_.client.pd->CreateCq(8, ch.get(), &rcq), 0);
  ASSERT_EQ(rcq->RequestNotify(), 0);
  // Push a completion into rcq through a QP of a fresh connection.
  Pair p;
  p.Listen();
  p.client.Init();
  ASSERT_EQ(p.client.pd->CreateActiveId("127.0.0.1", p.port.c_str(), 2000,
                                        &p.client.id),
            0);
  QpInit init;
  init.send_cq = rcq.get();
  init.recv_cq = rcq.get();
  ASSERT_EQ(p.client.id->CreateQp(init), 0);
  ASSERT_EQ(p.client.id->Migrate(p.client.ch.get()), 0);
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  Cq* got = nullptr;
  int rc = -1;
  std::thread waiter([&] { rc = ch->GetEvent(&got); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  SendWr z;
  z.opcode = Opcode::kRead;
  z.signaled = true;
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  waiter.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(got, rcq.get());
  rcq->AckEvents(1);
  EXPECT_EQ(PollN(rcq.get(), 1).size(), 1u);
  p.client.id.reset();
  p.server.id.reset();
  rcq.reset();
  ch.reset();
}

TEST_F(TcpDataTest, DeregistrationDuringRemoteWritesIsSafe) {
  // Large writes arrive in many pieces; the region goes away (and is
  // unmapped) in between: the rest of a payload is discarded, never
  // placed, and the write fails with a remote access error.
  constexpr size_t kLen = 4 << 20;
  void* tgt = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(tgt, MAP_FAILED);
  std::vector<uint8_t> src(kLen, 0x7e);
  std::unique_ptr<Mr> tmr, smr;
  ASSERT_EQ(p_.server.pd->RegMr(tgt, kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(src.data(), src.size(), kAll, &smr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.signaled = true;
  w.sge = {src.data(), static_cast<uint32_t>(kLen), smr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(tgt);
  w.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) {
    w.wr_id = i;
    ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  tmr.reset();
  ASSERT_EQ(munmap(tgt, kLen), 0);
  auto wc = PollN(p_.client.cq.get(), 8, 10000);
  ASSERT_EQ(wc.size(), 8u);
  bool failed = false;
  for (auto& c : wc) failed |= c.status != IBV_WC_SUCCESS;
  EXPECT_TRUE(failed);  // 32 MiB cannot all have landed within 2 ms
}

TEST_F(TcpDataTest, FlushedWritesNoLongerUseTheirBuffers) {
  // Writes still queued when Disconnect() flushes them: once their
  // completions are out, the buffer is the application's (ASan would
  // catch a later send from it).
  constexpr size_t kLen = 4 << 20;
  auto src = std::make_unique<std::vector<uint8_t>>(kLen, 0x11);
  std::vector<uint8_t> tgt(kLen);
  std::unique_ptr<Mr> tmr, smr;
  ASSERT_EQ(p_.server.pd->RegMr(tgt.data(), kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(src->data(), kLen, kAll, &smr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.signaled = true;
  w.sge = {src->data(), static_cast<uint32_t>(kLen), smr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(tgt.data());
  w.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  auto wc = PollN(p_.client.cq.get(), 8);
  ASSERT_EQ(wc.size(), 8u);
  EXPECT_EQ(wc[7].status, IBV_WC_WR_FLUSH_ERR);
  smr.reset();
  src.reset();
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p_.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST_F(TcpDataTest, FlushedReadsStopFillingTheirBuffers) {
  // Large reads in flight when Disconnect() flushes them: after the
  // completions the destination is unmapped; a late placement would fault.
  constexpr size_t kLen = 4 << 20;
  std::vector<uint8_t> src(kLen, 0x22);
  void* dst = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(dst, MAP_FAILED);
  std::unique_ptr<Mr> tmr, dmr;
  ASSERT_EQ(p_.server.pd->RegMr(src.data(), kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(dst, kLen, kAll, &dmr), 0);
  SendWr r;
  r.opcode = Opcode::kRead;
  r.signaled = true;
  r.sge = {dst, static_cast<uint32_t>(kLen), dmr->lkey()};
  r.remote_addr = reinterpret_cast<uint64_t>(src.data());
  r.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(p_.client.qp()->PostSend(r), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  auto wc = PollN(p_.client.cq.get(), 8);
  ASSERT_EQ(wc.size(), 8u);
  dmr.reset();
  ASSERT_EQ(munmap(dst, kLen), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p_.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST_F(TcpDataTest, PostSendAfterDisconnectFlushes) {
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kWrite, 5, 0, 8)), 0);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
