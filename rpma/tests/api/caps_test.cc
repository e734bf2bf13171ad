// Device capabilities: RPMA_TCP_CAPS makes the tcp device claim what a NIC
// claims, and the semantic layer then takes the paths a NIC without native
// flush / atomic write / with iWARP needs. White-box where the choice is
// invisible through the API (access flags of the flush buffer).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "api_test_util.h"
#include "conn.h"
#include "conn_fixture.h"
#include "peer.h"
#include "provider/device_registry.h"
#include "tcp/tcp_cq.h"
#include "tcp/tcp_device.h"

namespace rpma_test {
namespace {

using rpma::prov::DeviceCaps;
using rpma::prov::tcp::ParseCaps;

TEST(TcpCapsTest, ParseDefaultsToNativeAndAppliesTokensInOrder) {
  DeviceCaps c;
  ASSERT_EQ(ParseCaps(nullptr, &c), 0);
  EXPECT_TRUE(c.native_flush);
  EXPECT_TRUE(c.native_atomic_write);
  EXPECT_FALSE(c.iwarp);
  EXPECT_FALSE(c.odp);
  ASSERT_EQ(ParseCaps("emulated", &c), 0);
  EXPECT_FALSE(c.native_flush);
  EXPECT_FALSE(c.native_atomic_write);
  ASSERT_EQ(ParseCaps("emulated,flush,iwarp", &c), 0);
  EXPECT_TRUE(c.native_flush);
  EXPECT_FALSE(c.native_atomic_write);
  EXPECT_TRUE(c.iwarp);
  ASSERT_EQ(ParseCaps("no_flush", &c), 0);
  EXPECT_FALSE(c.native_flush);
  EXPECT_TRUE(c.native_atomic_write);
}

TEST(TcpCapsTest, ParseRefusesUnknownTokensAndLeavesOutput) {
  DeviceCaps c;
  c.odp = true;
  EXPECT_EQ(ParseCaps("native,rocev2", &c), -EINVAL);
  EXPECT_TRUE(c.odp);
}

TEST(TcpCapsTest, EachCapabilitySetIsItsOwnContext) {
  UseTcp();
  struct ibv_context* native = nullptr;
  struct ibv_context* emulated = nullptr;
  unsetenv("RPMA_TCP_CAPS");
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &native),
      0);
  setenv("RPMA_TCP_CAPS", "emulated", 1);
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &emulated),
      0);
  EXPECT_NE(native, emulated);
  rpma::prov::Device* dn = rpma::prov::DeviceFromContext(native);
  rpma::prov::Device* de = rpma::prov::DeviceFromContext(emulated);
  ASSERT_NE(dn, nullptr);
  ASSERT_NE(de, nullptr);
  EXPECT_TRUE(dn->caps().native_flush);
  EXPECT_FALSE(de->caps().native_flush);
  EXPECT_FALSE(de->caps().native_atomic_write);
  // Not iWARP by default: an IB-like channel adapter.
  EXPECT_EQ(native->device->transport_type, IBV_TRANSPORT_IB);
  unsetenv("RPMA_TCP_CAPS");
}

TEST(TcpCapsTest, UnknownCapsMakeTheLookupAProviderError) {
  UseTcp();
  setenv("RPMA_TCP_CAPS", "fast", 1);
  struct ibv_context* ctx = nullptr;
  EXPECT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
      RPMA_E_PROVIDER);
  EXPECT_EQ(ctx, nullptr);
  unsetenv("RPMA_TCP_CAPS");
}

TEST(TcpStrictTest, CqOverrunIsFatalOnlyInStrictMode) {
  for (bool strict : {false, true}) {
    if (strict) {
      setenv("RPMA_TCP_STRICT", "1", 1);
    } else {
      unsetenv("RPMA_TCP_STRICT");
    }
    rpma::prov::tcp::TcpCq cq(2, nullptr);
    struct ibv_wc wc = {};
    for (int i = 0; i < 3; i++) cq.Push(wc);
    struct ibv_wc out[4];
    EXPECT_EQ(cq.Poll(4, out), strict ? -EOVERFLOW : 3) << strict;
    EXPECT_EQ(cq.Poll(4, out), strict ? -EOVERFLOW : 0) << strict;
  }
  unsetenv("RPMA_TCP_STRICT");
}

// A connected pair on a tcp device with the given RPMA_TCP_CAPS.
class CapsConnTest : public ConnTest {
 protected:
  void SetUp() override {
    if (TestVerbsIp() != nullptr) GTEST_SKIP() << "tcp device modes only";
    setenv("RPMA_TCP_CAPS", Caps(), 1);
    ConnTest::SetUp();
  }
  void TearDown() override {
    ConnTest::TearDown();
    unsetenv("RPMA_TCP_CAPS");
  }
  virtual const char* Caps() { return "native"; }
  // Registers `usage` on the server buffer and exposes it to the client.
  void ExposeServer(int usage, struct rpma_mr_local** mr,
                    struct rpma_mr_remote** remote) {
    ASSERT_EQ(
        rpma_mr_reg(peer_, server_buf_.data(), server_buf_.size(), usage, mr),
        0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(*mr, desc), 0);
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, remote), 0);
  }
  // Writes "x" at offset 0 of `dst`; returns the completion status.
  int WriteStatus(struct rpma_mr_remote* dst) {
    struct rpma_cq* cq = nullptr;
    EXPECT_EQ(rpma_conn_get_cq(client_, &cq), 0);
    client_buf_[0] = 'x';
    EXPECT_EQ(rpma_write(client_, dst, 0, local_, 0, 1,
                         RPMA_F_COMPLETION_ALWAYS, nullptr),
              0);
    struct ibv_wc wc = {};
    EXPECT_EQ(WaitWc(cq, &wc), 0);
    return wc.status;
  }
};

TEST_F(CapsConnTest, ReadDstRegionIsNotRemotelyWritableOffIwarp) {
  struct rpma_mr_local* mr = nullptr;
  struct rpma_mr_remote* rmr = nullptr;
  ExposeServer(RPMA_MR_USAGE_READ_DST, &mr, &rmr);
  server_buf_[0] = 'o';
  EXPECT_EQ(WriteStatus(rmr), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(server_buf_[0], 'o');  // nothing landed
  rpma_mr_remote_delete(&rmr);
  rpma_mr_dereg(&mr);
}

class IwarpConnTest : public CapsConnTest {
 protected:
  const char* Caps() override { return "emulated,iwarp"; }
};

TEST_F(IwarpConnTest, ReadDstRegionIsRemotelyWritableOnIwarp) {
  EXPECT_EQ(ctx_->device->transport_type, IBV_TRANSPORT_IWARP);
  struct rpma_mr_local* mr = nullptr;
  struct rpma_mr_remote* rmr = nullptr;
  ExposeServer(RPMA_MR_USAGE_READ_DST, &mr, &rmr);
  EXPECT_EQ(WriteStatus(rmr), IBV_WC_SUCCESS);
  rpma_mr_remote_delete(&rmr);
  rpma_mr_dereg(&mr);
}

TEST_F(IwarpConnTest, FlushBufferIsRegisteredAsReadDst) {
  // librpma registers the APM landing buffer with RPMA_MR_USAGE_READ_DST:
  // on iWARP the read response is a remote write into it.
  for (struct rpma_conn* c : {client_, server_}) {
    ASSERT_NE(c->flush_mr, nullptr);
    EXPECT_EQ(c->flush_mr->access(),
              rpma::prov::kAccessLocalWrite | rpma::prov::kAccessRemoteWrite);
  }
}

class EmulatedConnTest : public CapsConnTest {
 protected:
  const char* Caps() override { return "emulated"; }
};

TEST_F(EmulatedConnTest, FlushIsAReadAndAtomicWriteAFencedWrite) {
  EXPECT_FALSE(client_->native_flush);
  EXPECT_FALSE(client_->native_atomic_write);
  ASSERT_NE(client_->flush_mr, nullptr);
  EXPECT_EQ(client_->flush_mr->access(), rpma::prov::kAccessLocalWrite);
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  char src[8] = {'e', 'm', 'u', 'l', 'a', 't', 'e', '\0'};
  ASSERT_EQ(rpma_atomic_write(client_, remote_, 8, src,
                              RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  ASSERT_EQ(rpma_flush(client_, remote_, 8, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  struct ibv_wc wc;
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
  ASSERT_EQ(WaitWc(cq, &wc), 0);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc.byte_len, 8u);  // the 8-byte read of the APM flush
  EXPECT_STREQ(server_buf_.data() + 8, "emulate");
}

TEST_F(CapsConnTest, NativeDeviceHasNoFlushBuffer) {
  EXPECT_TRUE(client_->native_flush);
  EXPECT_EQ(client_->flush_mr, nullptr);
}

}  // namespace
}  // namespace rpma_test
