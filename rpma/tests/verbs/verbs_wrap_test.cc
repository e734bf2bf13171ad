// Seam tests of the verbs provider without a device. librdmacm and
// libibverbs entry points are replaced at link time (-Wl,--wrap=..., see
// CMakeLists.txt) by scripted versions; ibv_post_send(), ibv_post_recv()
// and the ibv_wr_*() calls are static inline in rdma-core, so they are
// driven through the function tables of a fake ibv_qp / ibv_qp_ex instead.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "provider/provider.h"
#include "verbs/verbs_cm_channel.h"
#include "verbs/verbs_cm_id.h"
#include "verbs/verbs_mapping.h"
#include "verbs/verbs_qp.h"

namespace {

// --- Scripted librdmacm / libibverbs ---------------------------------------

struct Script {
  std::deque<rdma_cm_event*> events;  // next rdma_get_cm_event() answers
  int get_errno = EAGAIN;             // when events is empty
  int acks = 0;
  int devices = 1;  // what ibv_get_device_list() reports
};
Script g;

ibv_device g_device;
ibv_device* g_list[2] = {&g_device, nullptr};

}  // namespace

extern "C" {
int __wrap_rdma_get_cm_event(rdma_event_channel*, rdma_cm_event** ev) {
  if (g.events.empty()) {
    errno = g.get_errno;
    return -1;
  }
  *ev = g.events.front();
  g.events.pop_front();
  return 0;
}
int __wrap_rdma_ack_cm_event(rdma_cm_event*) {
  g.acks++;
  return 0;
}
int __wrap_rdma_destroy_id(rdma_cm_id*) { return 0; }
void __wrap_rdma_destroy_event_channel(rdma_event_channel*) {}
int __wrap_rdma_reject(rdma_cm_id*, const void*, uint8_t) { return 0; }
ibv_device** __wrap_ibv_get_device_list(int* num) {
  if (num != nullptr) *num = g.devices;
  return g.devices > 0 ? g_list : nullptr;
}
void __wrap_ibv_free_device_list(ibv_device**) {}
int __wrap_rdma_getaddrinfo(const char*, const char*, const rdma_addrinfo*,
                            rdma_addrinfo**) {
  errno = ENODEV;  // librdmacm without a usable device
  return -1;
}
}

namespace rpma::prov::verbs {
namespace {

rdma_cm_event MakeEvent(rdma_cm_id* id, rdma_cm_event_type type,
                        const void* pdata = nullptr, uint8_t len = 0) {
  rdma_cm_event ev = {};
  ev.id = id;
  ev.event = type;
  ev.param.conn.private_data = pdata;
  ev.param.conn.private_data_len = len;
  return ev;
}

class VerbsWrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = Script();
    channel_ = std::make_unique<VerbsCmChannel>(nullptr, &raw_channel_);
  }
  rdma_event_channel raw_channel_ = {};
  std::unique_ptr<VerbsCmChannel> channel_;
};

TEST_F(VerbsWrapTest, TimewaitExitAfterDisconnectedIsReportedOnce) {
  rdma_cm_id raw = {};
  VerbsCmId id(nullptr, &raw, channel_.get());
  rdma_cm_event disc = MakeEvent(&raw, RDMA_CM_EVENT_DISCONNECTED);
  rdma_cm_event tw = MakeEvent(&raw, RDMA_CM_EVENT_TIMEWAIT_EXIT);
  g.events = {&disc, &tw};
  CmEvent ev;
  ASSERT_EQ(channel_->GetEvent(&ev), 0);
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_EQ(ev.id, &id);
  // The TIMEWAIT_EXIT is acked and skipped; then nothing is pending.
  EXPECT_EQ(channel_->GetEvent(&ev), -ENODATA);
  EXPECT_EQ(g.acks, 2);
}

TEST_F(VerbsWrapTest, TimewaitExitAloneStillEndsTheConnection) {
  rdma_cm_id raw = {};
  VerbsCmId id(nullptr, &raw, channel_.get());
  rdma_cm_event tw = MakeEvent(&raw, RDMA_CM_EVENT_TIMEWAIT_EXIT);
  g.events = {&tw};
  CmEvent ev;
  ASSERT_EQ(channel_->GetEvent(&ev), 0);
  EXPECT_EQ(ev.type, CmEventType::kTimewaitExit);
  EXPECT_EQ(g.acks, 1);
}

TEST_F(VerbsWrapTest, EveryEventPathIsMappedAndAcked) {
  rdma_cm_id raw = {};
  VerbsCmId id(nullptr, &raw, channel_.get());
  struct Case {
    rdma_cm_event_type in;
    CmEventType out;
  };
  const Case cases[] = {
      {RDMA_CM_EVENT_ESTABLISHED, CmEventType::kEstablished},
      {RDMA_CM_EVENT_REJECTED, CmEventType::kRejected},
      {RDMA_CM_EVENT_UNREACHABLE, CmEventType::kUnreachable},
      {RDMA_CM_EVENT_CONNECT_ERROR, CmEventType::kConnectError},
      {RDMA_CM_EVENT_DEVICE_REMOVAL, CmEventType::kDeviceRemoval},
      {RDMA_CM_EVENT_ADDR_ERROR, CmEventType::kOther},
      {RDMA_CM_EVENT_ROUTE_ERROR, CmEventType::kOther},
      {RDMA_CM_EVENT_DISCONNECTED, CmEventType::kDisconnected},
  };
  int n = 0;
  for (const Case& c : cases) {
    rdma_cm_event e = MakeEvent(&raw, c.in);
    g.events = {&e};
    CmEvent ev;
    ASSERT_EQ(channel_->GetEvent(&ev), 0) << c.in;
    EXPECT_EQ(ev.type, c.out) << c.in;
    EXPECT_EQ(ev.id, &id);
    EXPECT_EQ(g.acks, ++n);
  }
}

TEST_F(VerbsWrapTest, PaddedPrivateDataIsDeliveredWholeAndRepeatedOnAccept) {
  // A NIC's CM hands the whole 56-byte field up, whatever was sent.
  uint8_t field[56] = {'h', 'i'};
  rdma_cm_id raw = {};
  rdma_cm_event req =
      MakeEvent(&raw, RDMA_CM_EVENT_CONNECT_REQUEST, field, sizeof(field));
  g.events = {&req};
  CmEvent ev;
  ASSERT_EQ(channel_->GetEvent(&ev), 0);
  ASSERT_EQ(ev.type, CmEventType::kConnectRequest);
  ASSERT_NE(ev.new_id, nullptr);
  EXPECT_EQ(ev.id, ev.new_id.get());
  EXPECT_EQ(ev.private_data, std::vector<uint8_t>(field, field + 56));
  // The passive ESTABLISHED carries the RTU's empty data; the provider
  // repeats the request's (provider.h).
  rdma_cm_event est = MakeEvent(&raw, RDMA_CM_EVENT_ESTABLISHED);
  g.events = {&est};
  CmEvent ev2;
  ASSERT_EQ(channel_->GetEvent(&ev2), 0);
  EXPECT_EQ(ev2.type, CmEventType::kEstablished);
  EXPECT_EQ(ev2.id, ev.new_id.get());
  EXPECT_EQ(ev2.private_data.size(), 56u);
}

TEST_F(VerbsWrapTest, GetEventErrorCodes) {
  CmEvent ev;
  g.get_errno = EAGAIN;
  EXPECT_EQ(channel_->GetEvent(&ev), -ENODATA);
  g.get_errno = ENODATA;
  EXPECT_EQ(channel_->GetEvent(&ev), -ENODATA);
  g.get_errno = EBADF;
  EXPECT_EQ(channel_->GetEvent(&ev), -EBADF);
  EXPECT_EQ(g.acks, 0);
}

TEST_F(VerbsWrapTest, AutoRefusesAWildcardAddressOnAHostWithRdmaDevices) {
  unsetenv("RPMA_PROVIDER");
  Device* dev = nullptr;
  EXPECT_EQ(SelectDevice("0.0.0.0", true, &dev), -EADDRNOTAVAIL);
  EXPECT_EQ(SelectDevice("::", true, &dev), -EADDRNOTAVAIL);
  EXPECT_EQ(dev, nullptr);
  // Either provider forced explicitly is fine, and so is no device at all.
  setenv("RPMA_PROVIDER", "tcp", 1);
  EXPECT_EQ(SelectDevice("0.0.0.0", true, &dev), 0);
  unsetenv("RPMA_PROVIDER");
  g.devices = 0;
  dev = nullptr;
  EXPECT_EQ(SelectDevice("0.0.0.0", true, &dev), 0);
  ASSERT_NE(dev, nullptr);
  EXPECT_STREQ(dev->provider_name(), "tcp");
}

TEST(VerbsAddressTest, WildcardAddresses) {
  EXPECT_TRUE(IsWildcardAddress("0.0.0.0"));
  EXPECT_TRUE(IsWildcardAddress("::"));
  EXPECT_FALSE(IsWildcardAddress("127.0.0.1"));
  EXPECT_FALSE(IsWildcardAddress("::1"));
  EXPECT_FALSE(IsWildcardAddress("localhost"));
  EXPECT_FALSE(IsWildcardAddress(nullptr));
}

// --- Posting through fake function tables ---------------------------------

struct Posted {
  ibv_send_wr wr = {};
  ibv_sge sge = {};
  int answer = 0;
  unsigned wr_flags = 0;
  uint64_t wr_id = 0;
  uint32_t rkey = 0;
  uint64_t raddr = 0;
  int starts = 0;
};
Posted g_post;

int FakePostSend(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad) {
  g_post.wr = *wr;
  if (wr->num_sge > 0) g_post.sge = *wr->sg_list;
  if (g_post.answer != 0) *bad = wr;
  return g_post.answer;  // a positive errno, as the vendor libraries do
}
void FakeWrStart(ibv_qp_ex* qpx) { g_post.starts++; }
void FakeWrAtomicWrite(ibv_qp_ex* qpx, uint32_t rkey, uint64_t raddr,
                       const void*) {
  g_post.wr_flags = qpx->wr_flags;
  g_post.wr_id = qpx->wr_id;
  g_post.rkey = rkey;
  g_post.raddr = raddr;
}
int FakeWrComplete(ibv_qp_ex*) { return g_post.answer; }

class VerbsQpFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_post = Posted();
    ctx_.ops.post_send = FakePostSend;
    qp_.context = &ctx_;
    qp_.qp_num = 77;
    qpx_.wr_start = FakeWrStart;
    qpx_.wr_atomic_write = FakeWrAtomicWrite;
    qpx_.wr_complete = FakeWrComplete;
  }
  ibv_context ctx_ = {};
  ibv_qp qp_ = {};
  ibv_qp_ex qpx_ = {};
};

TEST_F(VerbsQpFakeTest, PostSendBuildsTheWrAndMapsTheVendorErrno) {
  VerbsQp qp(&qp_, nullptr);
  SendWr wr;
  wr.opcode = Opcode::kWrite;
  wr.wr_id = 5;
  wr.signaled = true;
  wr.fence = true;
  wr.inline_data = true;
  char data[8];
  wr.sge = {data, 8, 0};
  wr.remote_addr = 0x1000;
  wr.rkey = 9;
  ASSERT_EQ(qp.PostSend(wr), 0);
  EXPECT_EQ(g_post.wr.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(g_post.wr.send_flags,
            unsigned{IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_INLINE});
  EXPECT_EQ(g_post.wr.wr.rdma.remote_addr, 0x1000u);
  EXPECT_EQ(g_post.wr.wr.rdma.rkey, 9u);
  EXPECT_EQ(g_post.sge.length, 8u);
  g_post.answer = ENOMEM;  // full send queue
  EXPECT_EQ(qp.PostSend(wr), -ENOMEM);
  wr.opcode = Opcode::kFlush;
  EXPECT_EQ(qp.PostSend(wr), -EOPNOTSUPP);
  wr.opcode = Opcode::kAtomicWrite;  // no extended QP: not native
  EXPECT_EQ(qp.PostSend(wr), -EOPNOTSUPP);
}

TEST_F(VerbsQpFakeTest, NativeAtomicWriteGoesThroughTheExtendedQp) {
  if (!kHaveIbvAtomicWrite) GTEST_SKIP() << "rdma-core < 44";
  VerbsQp qp(&qp_, &qpx_);
  SendWr wr;
  wr.opcode = Opcode::kAtomicWrite;
  wr.wr_id = 11;
  wr.signaled = true;
  wr.inline_data = true;  // meaningless for an atomic write: dropped
  wr.remote_addr = 0x2008;
  wr.rkey = 3;
  ASSERT_EQ(qp.PostSend(wr), 0);
  EXPECT_EQ(g_post.starts, 1);
  EXPECT_EQ(g_post.wr_id, 11u);
  EXPECT_EQ(g_post.wr_flags, unsigned{IBV_SEND_SIGNALED});
  EXPECT_EQ(g_post.rkey, 3u);
  EXPECT_EQ(g_post.raddr, 0x2008u);
  g_post.answer = EINVAL;
  EXPECT_EQ(qp.PostSend(wr), -EINVAL);
}

}  // namespace
}  // namespace rpma::prov::verbs
