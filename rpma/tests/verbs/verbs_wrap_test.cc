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
#include <memory>
#include <vector>

#include "provider/device_registry.h"
#include "provider/provider.h"
#include "verbs/verbs_cm_channel.h"
#include "verbs/verbs_cm_id.h"
#include "verbs/verbs_cq.h"
#include "verbs/verbs_mapping.h"
#include "verbs/verbs_pd.h"
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
// Device, PD, CQ, MR and QP creation, recorded.
ibv_pd g_pd;
ibv_pd g_pd2;  // the second PD after g_pd_calls was reset
int g_pd_calls = 0;
ibv_cq g_cq;
ibv_mr g_mr;
ibv_qp g_qp;
ibv_qp_init_attr_ex g_qp_attr;
int g_reg_access = -1;
int g_reg_calls = 0;
int __wrap_ibv_query_device(ibv_context*, ibv_device_attr* attr) {
  *attr = {};
  return 0;
}
ibv_pd* __wrap_ibv_alloc_pd(ibv_context* ctx) {
  ibv_pd* pd = g_pd_calls++ % 2 == 0 ? &g_pd : &g_pd2;
  pd->context = ctx;
  return pd;
}
int __wrap_ibv_dealloc_pd(ibv_pd*) { return 0; }
ibv_cq* __wrap_ibv_create_cq(ibv_context* ctx, int, void* cq_ctx,
                             ibv_comp_channel*, int) {
  g_cq.context = ctx;
  g_cq.cq_context = cq_ctx;
  return &g_cq;
}
int __wrap_ibv_destroy_cq(ibv_cq*) { return 0; }
ibv_mr* __wrap_ibv_reg_mr_iova2(ibv_pd*, void* addr, size_t len, uint64_t,
                                unsigned access) {
  g_reg_calls++;
  g_reg_access = static_cast<int>(access);
  g_mr.addr = addr;
  g_mr.length = len;
  return &g_mr;
}
ibv_mr* __wrap_ibv_reg_mr(ibv_pd* pd, void* addr, size_t len, int access) {
  return __wrap_ibv_reg_mr_iova2(pd, addr, len, 0, access);
}
int __wrap_ibv_dereg_mr(ibv_mr*) { return 0; }
int g_create_qp_calls = 0;
int g_create_qp_fail = 0;  // this many next calls fail with ENOMEM
int g_destroy_qp_calls = 0;
int __wrap_rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  g_create_qp_calls++;
  if (g_create_qp_fail > 0) {
    g_create_qp_fail--;
    errno = ENOMEM;
    return -1;
  }
  g_qp_attr = *attr;
  id->qp = &g_qp;
  return 0;
}
void __wrap_rdma_destroy_qp(rdma_cm_id* id) {
  g_destroy_qp_calls++;
  id->qp = nullptr;
}
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

// A VerbsDevice over a zeroed (non-extended) context: ibv_query_device_ex
// falls back to the wrapped ibv_query_device.
class VerbsObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = VerbsDeviceForContext(&ctx_);
    ASSERT_NE(dev_, nullptr);
    g_pd_calls = 0;  // pd_ gets g_pd
    ASSERT_EQ(dev_->AllocPd(&pd_), 0);
    g_reg_calls = 0;
  }
  ibv_context ctx_ = {};
  Device* dev_ = nullptr;
  std::unique_ptr<Pd> pd_;
};

// The wrapper lives in the one device registry: the same one for every
// lookup of the context, whichever way it comes.
TEST_F(VerbsObjectsTest, OneRegisteredWrapperPerContext) {
  EXPECT_EQ(VerbsDeviceForContext(&ctx_), dev_);
  EXPECT_EQ(DeviceRegistry::Instance().Find(&ctx_), dev_);
  EXPECT_EQ(DeviceFromContext(&ctx_), dev_);
  EXPECT_STREQ(dev_->provider_name(), "verbs");
}

TEST_F(VerbsObjectsTest, QpAttributesAreLibrpmas) {
  std::unique_ptr<Cq> scq, rcq;
  ASSERT_EQ(pd_->CreateCq(16, nullptr, &scq), 0);
  ASSERT_EQ(pd_->CreateCq(16, nullptr, &rcq), 0);
  rdma_cm_id raw = {};
  VerbsCmId id(static_cast<VerbsPd*>(pd_.get()), &raw, nullptr);
  QpInit init;
  init.send_cq = scq.get();
  init.recv_cq = rcq.get();
  init.sq_size = 12;
  init.rq_size = 7;
  ASSERT_EQ(id.CreateQp(init), 0);
  EXPECT_EQ(g_qp_attr.qp_type, IBV_QPT_RC);
  EXPECT_EQ(g_qp_attr.sq_sig_all, 0);
  EXPECT_EQ(g_qp_attr.cap.max_send_wr, 12u);
  EXPECT_EQ(g_qp_attr.cap.max_recv_wr, 7u);
  EXPECT_EQ(g_qp_attr.cap.max_send_sge, 1u);
  EXPECT_EQ(g_qp_attr.cap.max_recv_sge, 1u);
  EXPECT_EQ(g_qp_attr.cap.max_inline_data, kMaxInlineData);
  EXPECT_EQ(g_qp_attr.srq, nullptr);
  EXPECT_EQ(g_qp_attr.pd, &g_pd);
  // No native atomic write (not opted in): a plain QP, no send-ops list.
  EXPECT_EQ(g_qp_attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0u);
  ASSERT_NE(id.qp(), nullptr);
  EXPECT_EQ(id.CreateQp(init), -EINVAL);  // at most once
}

// rpma_conn_req_set_peer on verbs: the passive id's QP is destroyed and
// made again, with the same attributes, in the new PD (CQs stay: they are
// the context's).
class VerbsMoveQpTest : public VerbsObjectsTest {
 protected:
  void SetUp() override {
    VerbsObjectsTest::SetUp();
    ASSERT_EQ(dev_->AllocPd(&pd2_), 0);  // g_pd2
    ASSERT_EQ(pd_->CreateCq(16, nullptr, &cq_), 0);
    id_ = std::make_unique<VerbsCmId>(static_cast<VerbsPd*>(pd_.get()), &raw_,
                                      nullptr);
    id_->set_request_pdata({});  // a passive id
    init_.send_cq = cq_.get();
    init_.recv_cq = cq_.get();
    init_.sq_size = 12;
    init_.rq_size = 7;
    ASSERT_EQ(id_->CreateQp(init_), 0);
    ASSERT_EQ(g_qp_attr.pd, &g_pd);
    g_create_qp_calls = 0;
    g_destroy_qp_calls = 0;
    g_create_qp_fail = 0;
  }
  void TearDown() override { g_create_qp_fail = 0; }
  std::unique_ptr<Pd> pd2_;
  std::unique_ptr<Cq> cq_;
  rdma_cm_id raw_ = {};
  std::unique_ptr<VerbsCmId> id_;
  QpInit init_;
};

TEST_F(VerbsMoveQpTest, RecreatesTheQpInTheNewPdWithTheSameAttributes) {
  ASSERT_EQ(id_->MoveQp(pd2_.get()), 0);
  EXPECT_EQ(g_destroy_qp_calls, 1);
  EXPECT_EQ(g_create_qp_calls, 1);
  EXPECT_EQ(g_qp_attr.pd, &g_pd2);
  EXPECT_EQ(g_qp_attr.cap.max_send_wr, 12u);
  EXPECT_EQ(g_qp_attr.cap.max_recv_wr, 7u);
  EXPECT_EQ(g_qp_attr.send_cq, static_cast<VerbsCq*>(cq_.get())->cq());
  EXPECT_NE(id_->qp(), nullptr);
  // Back again, and a move to where it is does nothing.
  ASSERT_EQ(id_->MoveQp(pd_.get()), 0);
  EXPECT_EQ(g_qp_attr.pd, &g_pd);
  ASSERT_EQ(id_->MoveQp(pd_.get()), 0);
  EXPECT_EQ(g_create_qp_calls, 2);
}

TEST_F(VerbsMoveQpTest, AFailedCreateRecreatesTheQpInTheOldPd) {
  g_create_qp_fail = 1;
  EXPECT_EQ(id_->MoveQp(pd2_.get()), -ENOMEM);
  EXPECT_EQ(g_create_qp_calls, 2);
  EXPECT_EQ(g_qp_attr.pd, &g_pd);
  EXPECT_NE(id_->qp(), nullptr);
  // Still movable afterwards.
  EXPECT_EQ(id_->MoveQp(pd2_.get()), 0);
  EXPECT_EQ(g_qp_attr.pd, &g_pd2);
}

TEST_F(VerbsMoveQpTest, TwoFailedCreatesLeaveNoQpAndSayEio) {
  g_create_qp_fail = 2;
  EXPECT_EQ(id_->MoveQp(pd2_.get()), -EIO);
  EXPECT_EQ(id_->qp(), nullptr);
  EXPECT_EQ(id_->MoveQp(pd2_.get()), -EINVAL);  // nothing left to move
}

TEST_F(VerbsMoveQpTest, RefusesActiveIdsSrqsAndOtherProviders) {
  rdma_cm_id raw = {};
  VerbsCmId active(static_cast<VerbsPd*>(pd_.get()), &raw, nullptr);
  ASSERT_EQ(active.CreateQp(init_), 0);
  EXPECT_EQ(active.MoveQp(pd2_.get()), -EINVAL);
  EXPECT_EQ(id_->MoveQp(nullptr), -EINVAL);
  Device* tcp = nullptr;
  ASSERT_EQ(TcpGetDevice("127.0.0.1", true, &tcp), 0);
  std::unique_ptr<Pd> tcp_pd;
  ASSERT_EQ(tcp->AllocPd(&tcp_pd), 0);
  EXPECT_EQ(id_->MoveQp(tcp_pd.get()), -EINVAL);
  EXPECT_EQ(g_destroy_qp_calls, 0);  // nothing was touched
  EXPECT_NE(id_->qp(), nullptr);
}

// rpma_conn_req_set_group on verbs: the QP is made again in the same PD
// with other CQs (the group's), the queue sizes kept.
TEST_F(VerbsMoveQpTest, ReplaceQpRecreatesItOnTheNewCqs) {
  std::unique_ptr<Cq> cq2;
  ASSERT_EQ(pd_->CreateCq(16, nullptr, &cq2), 0);
  QpInit init = init_;
  init.send_cq = cq2.get();
  init.recv_cq = cq2.get();
  ASSERT_EQ(id_->ReplaceQp(init), 0);
  EXPECT_EQ(g_destroy_qp_calls, 1);
  EXPECT_EQ(g_create_qp_calls, 1);
  EXPECT_EQ(g_qp_attr.pd, &g_pd);
  EXPECT_EQ(g_qp_attr.send_cq, static_cast<VerbsCq*>(cq2.get())->cq());
  EXPECT_EQ(g_qp_attr.cap.max_send_wr, 12u);
  EXPECT_EQ(g_qp_attr.cap.max_recv_wr, 7u);
  // A later move to another PD keeps the new CQs (the init is the new one).
  ASSERT_EQ(id_->MoveQp(pd2_.get()), 0);
  EXPECT_EQ(g_qp_attr.send_cq, static_cast<VerbsCq*>(cq2.get())->cq());
  id_.reset();  // the QP before the CQs it uses
}

TEST_F(VerbsMoveQpTest, AFailedReplaceKeepsTheOldCqsOrSaysEio) {
  std::unique_ptr<Cq> cq2;
  ASSERT_EQ(pd_->CreateCq(16, nullptr, &cq2), 0);
  QpInit init = init_;
  init.send_cq = cq2.get();
  init.recv_cq = cq2.get();
  g_create_qp_fail = 1;
  EXPECT_EQ(id_->ReplaceQp(init), -ENOMEM);
  EXPECT_EQ(g_qp_attr.send_cq, static_cast<VerbsCq*>(cq_.get())->cq());
  EXPECT_NE(id_->qp(), nullptr);
  g_create_qp_fail = 2;
  EXPECT_EQ(id_->ReplaceQp(init), -EIO);
  EXPECT_EQ(id_->qp(), nullptr);
  EXPECT_EQ(id_->ReplaceQp(init), -EINVAL);  // no QP to replace
  QpInit bad = init_;
  bad.send_cq = nullptr;
  EXPECT_EQ(id_->ReplaceQp(bad), -EINVAL);
  id_.reset();
}

TEST_F(VerbsMoveQpTest, PerConnectionRegionsAndFloorsAreNotSupported) {
  char buf[64];
  std::unique_ptr<Mr> mr;
  EXPECT_EQ(
      pd_->RegMrForQp(id_->qp(), buf, sizeof(buf), kAccessRemoteWrite, &mr),
      -EOPNOTSUPP);
  ASSERT_EQ(pd_->RegMr(buf, sizeof(buf), kAccessRemoteWrite, &mr), 0);
  EXPECT_EQ(mr->RaiseRemoteFloor(8), -EOPNOTSUPP);
}

TEST_F(VerbsObjectsTest, RegistrationMapsAccessAndRejectsUnknownBits) {
  std::vector<char> buf(64);
  std::unique_ptr<Mr> mr;
  EXPECT_EQ(pd_->RegMr(buf.data(), buf.size(), 1 << 9, &mr), -EINVAL);
  EXPECT_EQ(g_reg_calls, 0);  // refused before the device saw it
  ASSERT_EQ(pd_->RegMr(buf.data(), buf.size(), kAccessRemoteWrite, &mr), 0);
  EXPECT_EQ(g_reg_access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
  ASSERT_EQ(pd_->RegMr(buf.data(), buf.size(), kAccessFlushPersistent, &mr), 0);
  EXPECT_EQ(g_reg_access, IBV_ACCESS_REMOTE_READ);  // APM flush is a read
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
