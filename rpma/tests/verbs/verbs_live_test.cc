// Live tests of the verbs provider on a real RDMA device (label `rdma`).
// Both ends run in this process on one device, over the address in
// RPKV_RDMA_ADDR or, if unset, the first local IPv4 address an RDMA device
// owns (e.g. Soft-RoCE: `rdma link add rxe0 type rxe netdev eth0`). Skipped
// when the host has no RDMA device or no usable address. Every wait is
// bounded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "provider/provider.h"
#include "verbs/verbs_device.h"

namespace rpma::prov {
namespace {

constexpr int kWaitMs = 10000;

// The first non-loopback IPv4 address owned by an RDMA device, or "".
std::string FindRdmaAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) == nullptr)
      continue;
    Device* dev = nullptr;
    if (VerbsGetDevice(buf, true, &dev) == 0) found = buf;
  }
  freeifaddrs(list);
  return found;
}

int WaitCmEvent(CmChannel* ch, CmEvent* ev) {
  pollfd p = {ch->fd(), POLLIN, 0};
  int n = poll(&p, 1, kWaitMs);
  if (n <= 0) return -ETIMEDOUT;
  return ch->GetEvent(ev);
}

int WaitWc(Cq* cq, ibv_wc* wc) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  while (std::chrono::steady_clock::now() < deadline) {
    int n = cq->Poll(1, wc);
    if (n != 0) return n;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return -ETIMEDOUT;
}

// One connection end. Member order = reverse destruction order: the id
// (and its QP) goes before the CQ, the listener before the channel.
struct End {
  std::unique_ptr<CmChannel> ch;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<CmId> id;
};

class VerbsLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!verbs::AnyRdmaDevice())
      GTEST_SKIP() << "no RDMA device (ibv_get_device_list is empty)";
    const char* env = std::getenv("RPKV_RDMA_ADDR");
    if (env != nullptr && *env != '\0') {
      addr_ = env;
      ASSERT_EQ(VerbsGetDevice(env, true, &dev_), 0)
          << "RPKV_RDMA_ADDR=" << env << " is not owned by an RDMA device";
    } else {
      addr_ = FindRdmaAddress();
      if (addr_.empty())
        GTEST_SKIP() << "no local address on an RDMA device; set "
                        "RPKV_RDMA_ADDR";
      ASSERT_EQ(VerbsGetDevice(addr_.c_str(), true, &dev_), 0);
    }
    ASSERT_STREQ(dev_->provider_name(), "verbs");
    ASSERT_EQ(dev_->AllocPd(&pd_), 0);
    static int counter = 0;
    port_ = std::to_string(20000 + (getpid() * 7 + counter++) % 20000);
  }

  // Connects client to server through the CM with private data both ways.
  void Connect() {
    ASSERT_EQ(pd_->CreateCmChannel(&server_.ch), 0);
    ASSERT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), server_.ch.get(),
                          &server_.listener),
              0);
    ASSERT_EQ(pd_->CreateCmChannel(&client_.ch), 0);
    ASSERT_EQ(
        pd_->CreateActiveId(addr_.c_str(), port_.c_str(), 2000, &client_.id),
        0);
    ASSERT_EQ(client_.id->Migrate(client_.ch.get()), 0);
    ASSERT_EQ(pd_->CreateCq(32, nullptr, &client_.cq), 0);
    ASSERT_EQ(client_.id->CreateQp(
                  {client_.cq.get(), client_.cq.get(), nullptr, 16, 16}),
              0);
    ASSERT_EQ(client_.id->Connect("hello", 5), 0);

    CmEvent req;
    ASSERT_EQ(WaitCmEvent(server_.ch.get(), &req), 0);
    ASSERT_EQ(req.type, CmEventType::kConnectRequest);
    ASSERT_NE(req.new_id, nullptr);
    EXPECT_EQ(req.id, req.new_id.get());
    ASSERT_GE(req.private_data.size(), 5u);  // IB/RoCE pad it
    EXPECT_EQ(std::memcmp(req.private_data.data(), "hello", 5), 0);
    server_.id = std::move(req.new_id);
    ASSERT_EQ(pd_->CreateCq(32, nullptr, &server_.cq), 0);
    ASSERT_EQ(server_.id->CreateQp(
                  {server_.cq.get(), server_.cq.get(), nullptr, 16, 16}),
              0);
    ASSERT_EQ(server_.id->Accept("world", 5), 0);

    CmEvent est;
    ASSERT_EQ(WaitCmEvent(client_.ch.get(), &est), 0);
    ASSERT_EQ(est.type, CmEventType::kEstablished);
    EXPECT_EQ(est.id, client_.id.get());
    ASSERT_GE(est.private_data.size(), 5u);
    EXPECT_EQ(std::memcmp(est.private_data.data(), "world", 5), 0);
    ASSERT_EQ(WaitCmEvent(server_.ch.get(), &est), 0);
    ASSERT_EQ(est.type, CmEventType::kEstablished);
    EXPECT_EQ(est.id, server_.id.get());
    // The passive side's ESTABLISHED repeats the client's data.
    ASSERT_GE(est.private_data.size(), 5u);
    EXPECT_EQ(std::memcmp(est.private_data.data(), "hello", 5), 0);
  }

  std::unique_ptr<Mr> Reg(std::vector<char>* buf, int access) {
    std::unique_ptr<Mr> mr;
    EXPECT_EQ(pd_->RegMr(buf->data(), buf->size(), access, &mr), 0);
    return mr;
  }

  SendWr OneSided(Opcode op, Mr* local, uint32_t len, Mr* remote) {
    SendWr wr;
    wr.opcode = op;
    wr.wr_id = 0x5151;
    wr.signaled = true;
    wr.sge = {local->addr(), len, local->lkey()};
    wr.remote_addr = reinterpret_cast<uintptr_t>(remote->addr());
    wr.rkey = remote->rkey();
    return wr;
  }

  Device* dev_ = nullptr;
  std::string addr_;
  std::string port_;
  std::unique_ptr<Pd> pd_;
  End server_;
  End client_;
};

TEST_F(VerbsLiveTest, RegMrReportsKeysAndRejectsNull) {
  std::vector<char> buf(4096);
  auto mr = Reg(&buf, kAccessRemoteRead | kAccessRemoteWrite);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr(), buf.data());
  EXPECT_EQ(mr->length(), buf.size());
  EXPECT_EQ(mr->access(), kAccessRemoteRead | kAccessRemoteWrite);
  std::unique_ptr<Mr> none;
  EXPECT_EQ(pd_->RegMr(nullptr, 64, kAccessLocalWrite, &none), -EINVAL);
  EXPECT_EQ(none, nullptr);
}

TEST_F(VerbsLiveTest, ConnectThenDisconnectReachesBothSides) {
  Connect();
  ASSERT_EQ(client_.id->Disconnect(), 0);
  CmEvent ev;
  ASSERT_EQ(WaitCmEvent(server_.ch.get(), &ev), 0);
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_EQ(ev.id, server_.id.get());
  // The disconnect rule (provider.h): the CM answers the client's DREQ
  // only when the server disconnects too, so the client's event comes
  // after this call, not before.
  EXPECT_EQ(server_.id->Disconnect(), 0);
  ASSERT_EQ(WaitCmEvent(client_.ch.get(), &ev), 0);
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST_F(VerbsLiveTest, WriteThenReadBack) {
  Connect();
  std::vector<char> target(4096, 0), src(64), dst(64, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i + 1);
  auto tmr = Reg(&target, kAccessRemoteWrite | kAccessRemoteRead);
  auto smr = Reg(&src, kAccessLocalWrite);
  auto dmr = Reg(&dst, kAccessLocalWrite);
  ASSERT_TRUE(tmr && smr && dmr);

  ASSERT_EQ(client_.id->qp()->PostSend(
                OneSided(Opcode::kWrite, smr.get(), 64, tmr.get())),
            0);
  ibv_wc wc = {};
  ASSERT_EQ(WaitWc(client_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(wc.wr_id, 0x5151u);
  EXPECT_EQ(wc.qp_num, client_.id->qp()->qp_num());
  EXPECT_EQ(std::memcmp(target.data(), src.data(), 64), 0);

  ASSERT_EQ(client_.id->qp()->PostSend(
                OneSided(Opcode::kRead, dmr.get(), 64, tmr.get())),
            0);
  ASSERT_EQ(WaitWc(client_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(dst, src);
}

TEST_F(VerbsLiveTest, SendRecvAndWriteWithImm) {
  Connect();
  std::vector<char> rbuf(64, 0), sbuf(16, 'x'), target(64, 0);
  auto rmr = Reg(&rbuf, kAccessLocalWrite);
  auto smr = Reg(&sbuf, kAccessLocalWrite);
  auto tmr = Reg(&target, kAccessRemoteWrite);
  ASSERT_TRUE(rmr && smr && tmr);

  RecvWr recv;
  recv.wr_id = 11;
  recv.sge = {rmr->addr(), 64, rmr->lkey()};
  ASSERT_EQ(server_.id->qp()->PostRecv(recv), 0);
  SendWr send;
  send.opcode = Opcode::kSendWithImm;
  send.wr_id = 12;
  send.signaled = true;
  send.imm_data = htonl(0x77);
  send.sge = {smr->addr(), 16, smr->lkey()};
  ASSERT_EQ(client_.id->qp()->PostSend(send), 0);

  ibv_wc wc = {};
  ASSERT_EQ(WaitWc(client_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  ASSERT_EQ(WaitWc(server_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.wr_id, 11u);
  EXPECT_EQ(wc.byte_len, 16u);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(wc.imm_data, htonl(0x77));
  EXPECT_EQ(std::memcmp(rbuf.data(), sbuf.data(), 16), 0);

  RecvWr zero;  // a write with immediate consumes a (zero-byte) receive
  zero.wr_id = 13;
  ASSERT_EQ(server_.id->qp()->PostRecv(zero), 0);
  SendWr wimm = OneSided(Opcode::kWriteWithImm, smr.get(), 16, tmr.get());
  wimm.imm_data = htonl(0x99);
  ASSERT_EQ(client_.id->qp()->PostSend(wimm), 0);
  ASSERT_EQ(WaitWc(client_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  ASSERT_EQ(WaitWc(server_.cq.get(), &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(wc.wr_id, 13u);
  EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(wc.imm_data, htonl(0x99));
  EXPECT_EQ(std::memcmp(target.data(), sbuf.data(), 16), 0);
}

TEST_F(VerbsLiveTest, AtomicWriteNativeOrNotSupportedAndNoNativeFlush) {
  Connect();
  std::vector<char> target(64, 0);
  auto tmr = Reg(&target, kAccessRemoteWrite | kAccessRemoteRead);
  ASSERT_TRUE(tmr);
  SendWr aw;
  aw.opcode = Opcode::kAtomicWrite;
  aw.wr_id = 21;
  aw.signaled = true;
  aw.remote_addr = reinterpret_cast<uintptr_t>(tmr->addr()) + 8;
  aw.rkey = tmr->rkey();
  std::memcpy(aw.atomic_data, "ATOMIC!!", 8);
  if (!dev_->caps().native_atomic_write) {
    EXPECT_EQ(client_.id->qp()->PostSend(aw), -EOPNOTSUPP);
  } else {
    ASSERT_EQ(client_.id->qp()->PostSend(aw), 0);
    ibv_wc wc = {};
    ASSERT_EQ(WaitWc(client_.cq.get(), &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);  // normalized
    EXPECT_EQ(std::memcmp(target.data() + 8, "ATOMIC!!", 8), 0);
  }
  EXPECT_FALSE(dev_->caps().native_flush);
  SendWr flush = aw;
  flush.opcode = Opcode::kFlush;
  flush.flush_length = 8;
  EXPECT_EQ(client_.id->qp()->PostSend(flush), -EOPNOTSUPP);
}

TEST_F(VerbsLiveTest, CompletionChannelNamesTheCq) {
  std::unique_ptr<CompletionChannel> comp;
  ASSERT_EQ(pd_->CreateCompletionChannel(&comp), 0);
  std::unique_ptr<Cq> cq;
  ASSERT_EQ(pd_->CreateCq(8, comp.get(), &cq), 0);
  EXPECT_EQ(cq->channel(), comp.get());
  ASSERT_EQ(fcntl(comp->fd(), F_SETFL, O_NONBLOCK), 0);
  Cq* fired = nullptr;
  EXPECT_EQ(comp->GetEvent(&fired), -EAGAIN);
  EXPECT_EQ(fired, nullptr);
  EXPECT_EQ(cq->RequestNotify(), 0);
}

TEST_F(VerbsLiveTest, NonBlockingCmChannelReportsNoData) {
  std::unique_ptr<CmChannel> ch;
  ASSERT_EQ(pd_->CreateCmChannel(&ch), 0);
  ASSERT_EQ(fcntl(ch->fd(), F_SETFL, O_NONBLOCK), 0);
  CmEvent ev;
  EXPECT_EQ(ch->GetEvent(&ev), -ENODATA);
}

TEST_F(VerbsLiveTest, ListenTwiceOnOnePortIsInUse) {
  std::unique_ptr<CmChannel> ch;
  ASSERT_EQ(pd_->CreateCmChannel(&ch), 0);
  std::unique_ptr<Listener> a, b;
  ASSERT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), ch.get(), &a), 0);
  EXPECT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), ch.get(), &b),
            -EADDRINUSE);
  EXPECT_EQ(b, nullptr);
}

TEST_F(VerbsLiveTest, NobodyListeningIsRejectedOrUnreachable) {
  ASSERT_EQ(pd_->CreateCmChannel(&client_.ch), 0);
  ASSERT_EQ(
      pd_->CreateActiveId(addr_.c_str(), port_.c_str(), 2000, &client_.id), 0);
  EXPECT_EQ(client_.id->Connect(nullptr, 0), -EINVAL);  // not migrated yet
  ASSERT_EQ(client_.id->Migrate(client_.ch.get()), 0);
  ASSERT_EQ(pd_->CreateCq(8, nullptr, &client_.cq), 0);
  ASSERT_EQ(
      client_.id->CreateQp({client_.cq.get(), client_.cq.get(), nullptr, 4, 4}),
      0);
  EXPECT_EQ(
      client_.id->CreateQp({client_.cq.get(), client_.cq.get(), nullptr, 4, 4}),
      -EINVAL);  // at most once
  ASSERT_EQ(client_.id->Connect(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_EQ(WaitCmEvent(client_.ch.get(), &ev), 0);
  EXPECT_TRUE(ev.type == CmEventType::kRejected ||
              ev.type == CmEventType::kUnreachable)
      << static_cast<int>(ev.type);
  EXPECT_EQ(ev.id, client_.id.get());
}

}  // namespace
}  // namespace rpma::prov
