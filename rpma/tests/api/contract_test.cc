// The provider contract (provider.h), one TEST_P suite run on every
// provider: tcp as it ships (native), tcp impersonating the common NIC
// (emulated), and verbs when RPMA_TEST_VERBS_IP names an address owned by
// an RDMA device (rxe/siw work; docs/verbs_provider.md). Where the two
// providers used to differ (Poll(0), a channel of the wrong provider,
// unknown access bits) this is what keeps them agreeing.
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.h"
#include "provider/provider.h"

namespace rpma_test {
namespace {

using namespace rpma::prov;  // NOLINT: the contract's own names

struct Param {
  const char* name;
  const char* tcp_caps;  // null: verbs
};

// Objects of "another provider".
class ForeignCompletionChannel : public CompletionChannel {
 public:
  int fd() const override { return -1; }
  int GetEvent(Cq**) override { return -EIO; }
};
class ForeignCq : public Cq {
 public:
  int Poll(int, struct ibv_wc*) override { return 0; }
  int RequestNotify() override { return 0; }
  void AckEvents(unsigned) override {}
  CompletionChannel* channel() const override { return nullptr; }
};
class ForeignCmChannel : public CmChannel {
 public:
  int fd() const override { return -1; }
  int GetEvent(CmEvent*) override { return -EIO; }
};

class ContractTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const Param& p = GetParam();
    if (p.tcp_caps != nullptr) {
      setenv("RPMA_TCP_CAPS", p.tcp_caps, 1);
      addr_ = kAddr;
      ASSERT_EQ(TcpGetDevice(addr_.c_str(), true, &dev_), 0);
    } else {
      const char* ip = std::getenv("RPMA_TEST_VERBS_IP");
      if (ip == nullptr || *ip == '\0')
        GTEST_SKIP() << "verbs: set RPMA_TEST_VERBS_IP to an address of an "
                        "RDMA device (docs/verbs_provider.md)";
      addr_ = ip;
      ASSERT_EQ(VerbsGetDevice(addr_.c_str(), true, &dev_), 0)
          << "RPMA_TEST_VERBS_IP=" << ip << " has no RDMA device";
    }
    ASSERT_EQ(dev_->AllocPd(&pd_), 0);
    port_ = Port(11);
  }
  void TearDown() override { unsetenv("RPMA_TCP_CAPS"); }

  static bool Next(CmChannel* ch, CmEvent* ev, int ms = 5000) {
    struct pollfd p = {ch->fd(), POLLIN, 0};
    if (poll(&p, 1, ms) != 1) return false;
    return ch->GetEvent(ev) == 0;
  }
  std::unique_ptr<Cq> MakeCq(int cqe = 8) {
    std::unique_ptr<Cq> cq;
    EXPECT_EQ(pd_->CreateCq(cqe, nullptr, &cq), 0);
    return cq;
  }

  Device* dev_ = nullptr;
  std::unique_ptr<Pd> pd_;
  std::string addr_;
  std::string port_;
};

TEST_P(ContractTest, CapsAreWhatTheDeviceClaims) {
  DeviceCaps c = dev_->caps();
  if (GetParam().tcp_caps != nullptr) {
    const bool native = std::strcmp(GetParam().tcp_caps, "native") == 0;
    EXPECT_EQ(c.native_flush, native);
    EXPECT_EQ(c.native_atomic_write, native);
    EXPECT_FALSE(c.iwarp);
  } else {
    EXPECT_FALSE(c.native_flush);  // rdma-core 44
  }
}

TEST_P(ContractTest, PollRejectsNonPositiveCountsAndNullArrays) {
  auto cq = MakeCq();
  ASSERT_NE(cq, nullptr);
  struct ibv_wc wc[2];
  EXPECT_EQ(cq->Poll(0, wc), -EINVAL);
  EXPECT_EQ(cq->Poll(-1, wc), -EINVAL);
  EXPECT_EQ(cq->Poll(1, nullptr), -EINVAL);
  EXPECT_EQ(cq->Poll(2, wc), 0);  // empty
  EXPECT_EQ(cq->RequestNotify(), 0);
}

TEST_P(ContractTest, CreateCqRejectsZeroEntriesAndForeignChannels) {
  std::unique_ptr<Cq> cq;
  EXPECT_EQ(pd_->CreateCq(0, nullptr, &cq), -EINVAL);
  ForeignCompletionChannel foreign;
  EXPECT_EQ(pd_->CreateCq(4, &foreign, &cq), -EINVAL);
  EXPECT_EQ(cq, nullptr);
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(pd_->CreateCompletionChannel(&ch), 0);
  ASSERT_EQ(pd_->CreateCq(4, ch.get(), &cq), 0);
  EXPECT_EQ(cq->channel(), ch.get());
  cq.reset();  // before its channel
}

TEST_P(ContractTest, RegMrChecksArgumentsAndAccessBits) {
  std::vector<char> buf(4096);
  std::unique_ptr<Mr> mr;
  EXPECT_EQ(pd_->RegMr(nullptr, 64, kAccessLocalWrite, &mr), -EINVAL);
  EXPECT_EQ(pd_->RegMr(buf.data(), 0, kAccessLocalWrite, &mr), -EINVAL);
  EXPECT_EQ(pd_->RegMr(buf.data(), 64, 1 << 7, &mr), -EINVAL);
  EXPECT_EQ(pd_->RegMr(buf.data(), 64, kAccessAll + 1, &mr), -EINVAL);
  EXPECT_EQ(mr, nullptr);
  ASSERT_EQ(pd_->RegMr(buf.data(), buf.size(),
                       kAccessRemoteRead | kAccessRemoteWrite, &mr),
            0);
  EXPECT_EQ(mr->addr(), buf.data());
  EXPECT_EQ(mr->length(), buf.size());
  EXPECT_EQ(mr->access(), kAccessRemoteRead | kAccessRemoteWrite);
}

TEST_P(ContractTest, ForeignChannelsAndCqsAreRejected) {
  ForeignCmChannel foreign;
  std::unique_ptr<Listener> l;
  EXPECT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), &foreign, &l), -EINVAL);
  EXPECT_EQ(l, nullptr);
  std::unique_ptr<CmId> id;
  ASSERT_EQ(pd_->CreateActiveId(addr_.c_str(), port_.c_str(), 1000, &id), 0);
  EXPECT_EQ(id->Migrate(&foreign), -EINVAL);
  EXPECT_EQ(id->Migrate(nullptr), -EINVAL);
  ForeignCq fcq;
  auto cq = MakeCq();
  QpInit init;
  init.send_cq = &fcq;
  init.recv_cq = cq.get();
  EXPECT_EQ(id->CreateQp(init), -EINVAL);
  init.send_cq = cq.get();
  init.recv_cq = nullptr;
  EXPECT_EQ(id->CreateQp(init), -EINVAL);
  EXPECT_EQ(id->qp(), nullptr);
  init.recv_cq = cq.get();
  ASSERT_EQ(id->CreateQp(init), 0);
  EXPECT_EQ(id->CreateQp(init), -EINVAL);  // at most once
  id.reset();                              // QP before its CQ
}

TEST_P(ContractTest, ConnectRefusesOversizedPrivateDataBeforeTheWire) {
  std::unique_ptr<CmChannel> lch;
  ASSERT_EQ(pd_->CreateCmChannel(&lch), 0);
  std::unique_ptr<Listener> l;
  ASSERT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), lch.get(), &l), 0);
  std::unique_ptr<CmChannel> ch;
  ASSERT_EQ(pd_->CreateCmChannel(&ch), 0);
  std::unique_ptr<CmId> id;
  ASSERT_EQ(pd_->CreateActiveId(addr_.c_str(), port_.c_str(), 1000, &id), 0);
  auto cq = MakeCq();
  QpInit init;
  init.send_cq = init.recv_cq = cq.get();
  ASSERT_EQ(id->CreateQp(init), 0);
  ASSERT_EQ(id->Migrate(ch.get()), 0);
  uint8_t big[kMaxConnectPrivateData + 1] = {};
  EXPECT_EQ(id->Connect(big, sizeof(big)), -EINVAL);
  EXPECT_EQ(id->Connect(nullptr, 3), -EINVAL);
  CmEvent ev;
  EXPECT_FALSE(Next(lch.get(), &ev, 200)) << "a request reached the listener";
  id.reset();
}

// Private data up to the limits, padding allowed, and the disconnect rule
// in its portable order.
TEST_P(ContractTest, HandshakeAndTheDisconnectRule) {
  std::unique_ptr<CmChannel> lch, cch, sch;
  ASSERT_EQ(pd_->CreateCmChannel(&lch), 0);
  ASSERT_EQ(pd_->CreateCmChannel(&cch), 0);
  ASSERT_EQ(pd_->CreateCmChannel(&sch), 0);
  std::unique_ptr<Listener> l;
  ASSERT_EQ(pd_->Listen(addr_.c_str(), port_.c_str(), lch.get(), &l), 0);
  auto ccq = MakeCq();
  auto scq = MakeCq();
  QpInit ci;
  ci.send_cq = ci.recv_cq = ccq.get();
  QpInit si;
  si.send_cq = si.recv_cq = scq.get();
  std::unique_ptr<CmId> client;
  ASSERT_EQ(pd_->CreateActiveId(addr_.c_str(), port_.c_str(), 1000, &client),
            0);
  ASSERT_EQ(client->CreateQp(ci), 0);
  ASSERT_EQ(client->Migrate(cch.get()), 0);
  uint8_t hello[kMaxConnectPrivateData];
  for (size_t i = 0; i < sizeof(hello); i++) hello[i] = uint8_t(i + 1);
  ASSERT_EQ(client->Connect(hello, sizeof(hello)), 0);

  CmEvent req;
  ASSERT_TRUE(Next(lch.get(), &req));
  ASSERT_EQ(req.type, CmEventType::kConnectRequest);
  ASSERT_NE(req.new_id, nullptr);
  ASSERT_GE(req.private_data.size(), sizeof(hello));
  EXPECT_EQ(std::memcmp(req.private_data.data(), hello, sizeof(hello)), 0);
  std::unique_ptr<CmId> server = std::move(req.new_id);
  ASSERT_EQ(server->CreateQp(si), 0);
  ASSERT_EQ(server->Migrate(sch.get()), 0);
  uint8_t reply[kMaxAcceptPrivateData + 1];
  std::memset(reply, 0xa5, sizeof(reply));
  EXPECT_EQ(server->Accept(reply, sizeof(reply)), -EINVAL);  // still pending
  ASSERT_EQ(server->Accept(reply, kMaxAcceptPrivateData), 0);

  CmEvent ev;
  ASSERT_TRUE(Next(cch.get(), &ev));
  ASSERT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(ev.id, client.get());
  ASSERT_GE(ev.private_data.size(), size_t{kMaxAcceptPrivateData});
  EXPECT_EQ(std::memcmp(ev.private_data.data(), reply, kMaxAcceptPrivateData),
            0);
  ASSERT_TRUE(Next(sch.get(), &ev));
  ASSERT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(ev.id, server.get());

  ASSERT_EQ(client->Disconnect(), 0);
  ASSERT_TRUE(Next(sch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  ASSERT_EQ(server->Disconnect(), 0);  // the client's event comes after this
  ASSERT_TRUE(Next(cch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_EQ(ev.id, client.get());
  client.reset();
  server.reset();
}

INSTANTIATE_TEST_SUITE_P(Providers, ContractTest,
                         ::testing::Values(Param{"TcpNative", "native"},
                                           Param{"TcpEmulated", "emulated"},
                                           Param{"Verbs", nullptr}),
                         [](const ::testing::TestParamInfo<Param>& i) {
                           return i.param.name;
                         });

}  // namespace
}  // namespace rpma_test
