// Unit tests of the verbs provider's pure translations (verbs_mapping.h):
// no RDMA device needed.
#include "verbs/verbs_mapping.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rpma::prov::verbs {
namespace {

TEST(VerbsMappingTest, AccessMapsEachBit) {
  EXPECT_EQ(AccessToIbv(0), 0);
  EXPECT_EQ(AccessToIbv(kAccessLocalWrite), IBV_ACCESS_LOCAL_WRITE);
  EXPECT_EQ(AccessToIbv(kAccessRemoteRead), IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(AccessToIbv(kAccessRemoteWrite),
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
}

TEST(VerbsMappingTest, AccessFlushBitsBecomeRemoteRead) {
  EXPECT_EQ(AccessToIbv(kAccessFlushVisibility), IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(AccessToIbv(kAccessFlushPersistent), IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(AccessToIbv(kAccessFlushPersistent | kAccessRemoteWrite),
            IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
                IBV_ACCESS_LOCAL_WRITE);
}

TEST(VerbsMappingTest, AccessNeverAsksForOnDemandOrAtomics) {
  const int all = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                  kAccessFlushVisibility | kAccessFlushPersistent;
  EXPECT_EQ(
      AccessToIbv(all) & (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_ATOMIC), 0);
}

TEST(VerbsMappingTest, CapsOdpNeedsGeneralAndRcReadWrite) {
  ibv_device_attr_ex attr = {};
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).odp);
  attr.odp_caps.general_caps = IBV_ODP_SUPPORT;
  attr.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_WRITE;
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).odp);
  attr.odp_caps.per_transport_caps.rc_odp_caps =
      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ;
  EXPECT_TRUE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).odp);
  attr.odp_caps.general_caps = 0;
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).odp);
}

TEST(VerbsMappingTest, CapsAtomicWriteOnlyWhenOptedInAndNoNativeFlush) {
  ibv_device_attr_ex attr = {};
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, true).native_atomic_write);
  attr.device_cap_flags_ex = kDeviceCapAtomicWrite;
  // The device bit alone is not enough: the responder may lack it.
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).native_atomic_write);
  EXPECT_EQ(CapsFromAttr(attr, IBV_TRANSPORT_IB, true).native_atomic_write,
            kHaveIbvAtomicWrite);
  attr.device_cap_flags_ex = ~0ULL;
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, true).native_flush);
  EXPECT_EQ(kDeviceCapAtomicWrite, 1ULL << 40);
}

TEST(VerbsMappingTest, NativeAtomicWriteIsOptInByEnvironment) {
  unsetenv("RPMA_VERBS_NATIVE_ATOMIC_WRITE");
  EXPECT_FALSE(NativeAtomicWriteAllowed());
  setenv("RPMA_VERBS_NATIVE_ATOMIC_WRITE", "0", 1);
  EXPECT_FALSE(NativeAtomicWriteAllowed());
  setenv("RPMA_VERBS_NATIVE_ATOMIC_WRITE", "1", 1);
  EXPECT_TRUE(NativeAtomicWriteAllowed());
  unsetenv("RPMA_VERBS_NATIVE_ATOMIC_WRITE");
}

TEST(VerbsMappingTest, CapsIwarpFromTransport) {
  ibv_device_attr_ex attr = {};
  EXPECT_TRUE(CapsFromAttr(attr, IBV_TRANSPORT_IWARP, false).iwarp);
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_IB, false).iwarp);
  EXPECT_FALSE(CapsFromAttr(attr, IBV_TRANSPORT_UNKNOWN, false).iwarp);
}

TEST(VerbsMappingTest, SendFlagsMapEachFlag) {
  SendWr wr;
  EXPECT_EQ(SendFlags(wr), 0u);
  wr.signaled = true;
  EXPECT_EQ(SendFlags(wr), static_cast<unsigned>(IBV_SEND_SIGNALED));
  wr.fence = true;
  wr.inline_data = true;
  EXPECT_EQ(SendFlags(wr),
            static_cast<unsigned>(IBV_SEND_SIGNALED | IBV_SEND_FENCE |
                                  IBV_SEND_INLINE));
}

SendWr OneSidedWr(Opcode op) {
  static char buf[64];
  SendWr wr;
  wr.opcode = op;
  wr.wr_id = 0x1234;
  wr.sge = {buf, sizeof(buf), 77};
  wr.remote_addr = 0xdead0000;
  wr.rkey = 99;
  wr.imm_data = htonl(0xabcd);
  return wr;
}

TEST(VerbsMappingTest, BuildSendWrPerOpcode) {
  struct Case {
    Opcode op;
    ibv_wr_opcode expect;
    bool rdma;
    bool imm;
  } cases[] = {
      {Opcode::kRead, IBV_WR_RDMA_READ, true, false},
      {Opcode::kWrite, IBV_WR_RDMA_WRITE, true, false},
      {Opcode::kWriteWithImm, IBV_WR_RDMA_WRITE_WITH_IMM, true, true},
      {Opcode::kSend, IBV_WR_SEND, false, false},
      {Opcode::kSendWithImm, IBV_WR_SEND_WITH_IMM, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.op));
    SendWr wr = OneSidedWr(c.op);
    ibv_sge sge;
    ibv_send_wr w;
    ASSERT_EQ(BuildSendWr(wr, &sge, &w), 0);
    EXPECT_EQ(w.opcode, c.expect);
    EXPECT_EQ(w.wr_id, 0x1234u);
    EXPECT_EQ(w.next, nullptr);
    ASSERT_EQ(w.num_sge, 1);
    EXPECT_EQ(w.sg_list, &sge);
    EXPECT_EQ(sge.addr, reinterpret_cast<uintptr_t>(wr.sge.addr));
    EXPECT_EQ(sge.length, 64u);
    EXPECT_EQ(sge.lkey, 77u);
    EXPECT_EQ(w.wr.rdma.remote_addr, c.rdma ? 0xdead0000u : 0u);
    EXPECT_EQ(w.wr.rdma.rkey, c.rdma ? 99u : 0u);
    // imm_data is passed through untouched: it is already network order.
    EXPECT_EQ(w.imm_data, c.imm ? htonl(0xabcd) : 0u);
  }
}

TEST(VerbsMappingTest, BuildSendWrZeroLengthPostsNoSge) {
  SendWr wr = OneSidedWr(Opcode::kRead);
  wr.sge = {};
  wr.remote_addr = 0;
  wr.rkey = 0;
  ibv_sge sge;
  ibv_send_wr w;
  ASSERT_EQ(BuildSendWr(wr, &sge, &w), 0);
  EXPECT_EQ(w.num_sge, 0);
  EXPECT_EQ(w.sg_list, nullptr);
  // A zero length with an address is also no SGE (byte_count 0 can mean
  // 2 GiB on some RNICs).
  char c;
  wr.sge = {&c, 0, 5};
  ASSERT_EQ(BuildSendWr(wr, &sge, &w), 0);
  EXPECT_EQ(w.num_sge, 0);
}

TEST(VerbsMappingTest, BuildSendWrCarriesFlags) {
  SendWr wr = OneSidedWr(Opcode::kWrite);
  wr.signaled = true;
  wr.fence = true;
  wr.inline_data = true;
  ibv_sge sge;
  ibv_send_wr w;
  ASSERT_EQ(BuildSendWr(wr, &sge, &w), 0);
  EXPECT_EQ(w.send_flags,
            static_cast<unsigned>(IBV_SEND_SIGNALED | IBV_SEND_FENCE |
                                  IBV_SEND_INLINE));
}

TEST(VerbsMappingTest, BuildSendWrRejectsAtomicWriteFlushAndUnknown) {
  ibv_sge sge;
  ibv_send_wr w = {};
  w.wr_id = 42;
  EXPECT_EQ(BuildSendWr(OneSidedWr(Opcode::kAtomicWrite), &sge, &w),
            -EOPNOTSUPP);
  EXPECT_EQ(BuildSendWr(OneSidedWr(Opcode::kFlush), &sge, &w), -EOPNOTSUPP);
  EXPECT_EQ(BuildSendWr(OneSidedWr(static_cast<Opcode>(99)), &sge, &w),
            -EINVAL);
  EXPECT_EQ(w.wr_id, 42u);  // out untouched on failure
}

TEST(VerbsMappingTest, BuildRecvWr) {
  char buf[16];
  RecvWr wr;
  wr.wr_id = 7;
  wr.sge = {buf, sizeof(buf), 3};
  ibv_sge sge;
  ibv_recv_wr w;
  BuildRecvWr(wr, &sge, &w);
  EXPECT_EQ(w.wr_id, 7u);
  EXPECT_EQ(w.next, nullptr);
  ASSERT_EQ(w.num_sge, 1);
  EXPECT_EQ(sge.addr, reinterpret_cast<uintptr_t>(buf));
  EXPECT_EQ(sge.length, 16u);
  EXPECT_EQ(sge.lkey, 3u);
  wr.sge = {};
  BuildRecvWr(wr, &sge, &w);
  EXPECT_EQ(w.num_sge, 0);
  EXPECT_EQ(w.sg_list, nullptr);
}

TEST(VerbsMappingTest, CmEventsMap) {
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_CONNECT_REQUEST),
            CmEventType::kConnectRequest);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_ESTABLISHED), CmEventType::kEstablished);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_REJECTED), CmEventType::kRejected);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_UNREACHABLE), CmEventType::kUnreachable);
  // As librpma (RPMA_E_UNKNOWN); resolution is synchronous here, so they
  // do not reach a connection's channel anyway.
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_ADDR_ERROR), CmEventType::kOther);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_ROUTE_ERROR), CmEventType::kOther);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_CONNECT_ERROR),
            CmEventType::kConnectError);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_DISCONNECTED), CmEventType::kDisconnected);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_TIMEWAIT_EXIT),
            CmEventType::kTimewaitExit);
  EXPECT_EQ(MapCmEvent(RDMA_CM_EVENT_DEVICE_REMOVAL),
            CmEventType::kDeviceRemoval);
  for (auto t : {RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ROUTE_RESOLVED,
                 RDMA_CM_EVENT_CONNECT_RESPONSE, RDMA_CM_EVENT_MULTICAST_JOIN,
                 RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE}) {
    EXPECT_EQ(MapCmEvent(t), CmEventType::kOther) << t;
  }
}

TEST(VerbsMappingTest, NormalizeWcReportsAtomicWriteAsRdmaWrite) {
  ibv_wc wc = {};
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_ATOMIC_WRITE;
  NormalizeWc(&wc);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  wc.opcode = IBV_WC_RDMA_READ;
  NormalizeWc(&wc);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  NormalizeWc(&wc);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
}

TEST(VerbsMappingTest, NegErrnoCoversBothConventions) {
  EXPECT_EQ(NegErrno(ENOMEM, 0), -ENOMEM);           // ibv_post_*: errno value
  EXPECT_EQ(NegErrno(-1, EADDRINUSE), -EADDRINUSE);  // librdmacm: -1 + errno
  EXPECT_EQ(NegErrno(0, EINVAL), -EINVAL);           // NULL-returning calls
  EXPECT_EQ(NegErrno(-1, 0), -EIO);                  // never 0 for a failure
  EXPECT_EQ(NegErrno(-ENOSPC, 0), -ENOSPC);
}

TEST(VerbsMappingTest, LoopbackDetection) {
  sockaddr_in v4 = {};
  v4.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
  EXPECT_TRUE(IsLoopback(reinterpret_cast<sockaddr*>(&v4)));
  inet_pton(AF_INET, "127.1.2.3", &v4.sin_addr);
  EXPECT_TRUE(IsLoopback(reinterpret_cast<sockaddr*>(&v4)));
  inet_pton(AF_INET, "192.168.1.1", &v4.sin_addr);
  EXPECT_FALSE(IsLoopback(reinterpret_cast<sockaddr*>(&v4)));

  sockaddr_in6 v6 = {};
  v6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::1", &v6.sin6_addr);
  EXPECT_TRUE(IsLoopback(reinterpret_cast<sockaddr*>(&v6)));
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &v6.sin6_addr);
  EXPECT_TRUE(IsLoopback(reinterpret_cast<sockaddr*>(&v6)));
  inet_pton(AF_INET6, "fe80::1", &v6.sin6_addr);
  EXPECT_FALSE(IsLoopback(reinterpret_cast<sockaddr*>(&v6)));
  EXPECT_FALSE(IsLoopback(nullptr));
}

}  // namespace
}  // namespace rpma::prov::verbs
