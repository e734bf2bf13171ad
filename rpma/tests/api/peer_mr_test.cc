// peer, local and remote memory regions and their descriptor, SRQ.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "api_test_util.h"
#include "librpma.h"

namespace {

using rpma_test::PeerFixture;

class SrqTest : public PeerFixture {};

TEST(PeerTest, NewRejectsNullContext) {
  struct rpma_peer* peer = nullptr;
  EXPECT_EQ(rpma_peer_new(nullptr, &peer), RPMA_E_INVAL);
  EXPECT_EQ(peer, nullptr);
}

TEST(PeerTest, NewRejectsNullOut) {
  rpma_test::UseTestProvider();
  struct ibv_context* ctx = nullptr;
  ASSERT_EQ(rpma_utils_get_ibv_context(rpma_test::kAddr,
                                       RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
            0);
  EXPECT_EQ(rpma_peer_new(ctx, nullptr), RPMA_E_INVAL);
}

TEST(PeerTest, DeleteRejectsNullAndAcceptsNullObject) {
  EXPECT_EQ(rpma_peer_delete(nullptr), RPMA_E_INVAL);
  struct rpma_peer* peer = nullptr;
  EXPECT_EQ(rpma_peer_delete(&peer), 0);
}

class MrTest : public PeerFixture {
 protected:
  void SetUp() override {
    PeerFixture::SetUp();
    buf_.resize(4096);
  }
  std::vector<char> buf_;
};

TEST_F(MrTest, RegRejectsNullPeer) {
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_reg(nullptr, buf_.data(), buf_.size(),
                        RPMA_MR_USAGE_READ_SRC, &mr),
            RPMA_E_INVAL);
  EXPECT_EQ(mr, nullptr);
}

TEST_F(MrTest, RegRejectsNullPtr) {
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_reg(peer_, nullptr, 16, RPMA_MR_USAGE_READ_SRC, &mr),
            RPMA_E_INVAL);
}

TEST_F(MrTest, RegRejectsZeroSize) {
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_reg(peer_, buf_.data(), 0, RPMA_MR_USAGE_READ_SRC, &mr),
            RPMA_E_INVAL);
}

TEST_F(MrTest, RegRejectsNullOut) {
  EXPECT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(), RPMA_MR_USAGE_READ_SRC,
                        nullptr),
            RPMA_E_INVAL);
}

TEST_F(MrTest, RegRejectsZeroUsage) {
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(), 0, &mr), RPMA_E_INVAL);
}

TEST_F(MrTest, RegRejectsUnknownUsageBits) {
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                        RPMA_MR_USAGE_READ_SRC | (1 << 8), &mr),
            RPMA_E_INVAL);
}

TEST_F(MrTest, DeregRejectsNullAndAcceptsNullObject) {
  EXPECT_EQ(rpma_mr_dereg(nullptr), RPMA_E_INVAL);
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_mr_dereg(&mr), 0);
}

TEST_F(MrTest, GettersReportTheRegistration) {
  struct rpma_mr_local* mr = nullptr;
  ASSERT_EQ(rpma_mr_reg(peer_, buf_.data(), buf_.size(),
                        RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC, &mr),
            0);
  void* ptr = nullptr;
  size_t size = 0;
  ASSERT_EQ(rpma_mr_get_ptr(mr, &ptr), 0);
  EXPECT_EQ(ptr, buf_.data());
  ASSERT_EQ(rpma_mr_get_size(mr, &size), 0);
  EXPECT_EQ(size, buf_.size());
  ASSERT_EQ(rpma_mr_get_descriptor_size(mr, &size), 0);
  EXPECT_EQ(size, 21u);
  EXPECT_EQ(rpma_mr_get_ptr(nullptr, &ptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_ptr(mr, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_size(nullptr, &size), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_size(mr, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_descriptor_size(nullptr, &size), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_descriptor_size(mr, nullptr), RPMA_E_INVAL);
  uint8_t desc[21];
  EXPECT_EQ(rpma_mr_get_descriptor(nullptr, desc), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_get_descriptor(mr, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_dereg(&mr), 0);
  EXPECT_EQ(mr, nullptr);
}

TEST_F(MrTest, DescriptorIsLittleEndianAddrLenRkeyUsage) {
  struct rpma_mr_local* mr = nullptr;
  int usage = RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT;
  ASSERT_EQ(rpma_mr_reg(peer_, buf_.data() + 8, 100, usage, &mr), 0);
  uint8_t desc[22];
  desc[21] = 0x5a;
  ASSERT_EQ(rpma_mr_get_descriptor(mr, desc), 0);
  EXPECT_EQ(desc[21], 0x5a) << "wrote past 21 bytes";
  uint64_t addr = 0, len = 0;
  for (int i = 0; i < 8; i++) addr |= static_cast<uint64_t>(desc[i]) << (8 * i);
  for (int i = 0; i < 8; i++)
    len |= static_cast<uint64_t>(desc[8 + i]) << (8 * i);
  EXPECT_EQ(addr, reinterpret_cast<uintptr_t>(buf_.data() + 8));
  EXPECT_EQ(len, 100u);
  EXPECT_EQ(desc[20], usage);

  struct rpma_mr_remote* remote = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, sizeof(desc), &remote), 0);
  size_t size = 0;
  ASSERT_EQ(rpma_mr_remote_get_size(remote, &size), 0);
  EXPECT_EQ(size, 100u);
  int flush_type = 0;
  ASSERT_EQ(rpma_mr_remote_get_flush_type(remote, &flush_type), 0);
  EXPECT_EQ(flush_type, RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT);
  EXPECT_EQ(rpma_mr_remote_delete(&remote), 0);
  EXPECT_EQ(remote, nullptr);
  rpma_mr_dereg(&mr);
}

TEST(MrRemoteTest, FromDescriptorRejectsNull) {
  uint8_t desc[21] = {};
  desc[20] = 1;
  struct rpma_mr_remote* mr = nullptr;
  EXPECT_EQ(rpma_mr_remote_from_descriptor(nullptr, 21, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_from_descriptor(desc, 21, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(mr, nullptr);
}

TEST(MrRemoteTest, FromDescriptorRejectsShortDescriptor) {
  uint8_t desc[21] = {};
  desc[20] = 1;
  struct rpma_mr_remote* mr = nullptr;
  EXPECT_EQ(rpma_mr_remote_from_descriptor(desc, 20, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_from_descriptor(desc, 0, &mr), RPMA_E_INVAL);
  EXPECT_EQ(mr, nullptr);
}

TEST(MrRemoteTest, FromDescriptorRejectsZeroUsage) {
  uint8_t desc[21] = {1, 2, 3};
  struct rpma_mr_remote* mr = nullptr;
  EXPECT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &mr), RPMA_E_INVAL);
  EXPECT_EQ(mr, nullptr);
}

TEST(MrRemoteTest, FromDescriptorKeepsUnknownUsageBitsAndDecodesFields) {
  uint8_t desc[21] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02,
                      0x01, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,
                      0x00, 0x00, 0xef, 0xbe, 0xad, 0xde, 0xff};
  struct rpma_mr_remote* mr = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &mr), 0);
  size_t size = 0;
  ASSERT_EQ(rpma_mr_remote_get_size(mr, &size), 0);
  EXPECT_EQ(size, 16u);
  int flush_type = 0;
  ASSERT_EQ(rpma_mr_remote_get_flush_type(mr, &flush_type), 0);
  EXPECT_EQ(flush_type, RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT |
                            RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
  rpma_mr_remote_delete(&mr);
}

TEST(MrRemoteTest, GettersAndDeleteRejectNull) {
  uint8_t desc[21] = {};
  desc[20] = RPMA_MR_USAGE_READ_SRC;
  struct rpma_mr_remote* mr = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &mr), 0);
  size_t size;
  int ft;
  EXPECT_EQ(rpma_mr_remote_get_size(nullptr, &size), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_get_size(mr, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_get_flush_type(nullptr, &ft), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_get_flush_type(mr, nullptr), RPMA_E_INVAL);
  ASSERT_EQ(rpma_mr_remote_get_flush_type(mr, &ft), 0);
  EXPECT_EQ(ft, 0);
  EXPECT_EQ(rpma_mr_remote_delete(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_remote_delete(&mr), 0);
  EXPECT_EQ(rpma_mr_remote_delete(&mr), 0);
}

TEST_F(MrTest, AdviseIsNotSupported) {
  struct rpma_mr_local* mr = nullptr;
  ASSERT_EQ(
      rpma_mr_reg(peer_, buf_.data(), buf_.size(), RPMA_MR_USAGE_READ_DST, &mr),
      0);
  EXPECT_EQ(rpma_mr_advise(mr, 0, 64, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                           IBV_ADVISE_MR_FLAG_FLUSH),
            RPMA_E_NOSUPP);
  EXPECT_EQ(rpma_mr_advise(nullptr, 0, 64, 0, 0), RPMA_E_INVAL);
  rpma_mr_dereg(&mr);
}

// ---- srq ----

TEST_F(SrqTest, NewRejectsNull) {
  struct rpma_srq* srq = nullptr;
  EXPECT_EQ(rpma_srq_new(nullptr, nullptr, &srq), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_new(peer_, nullptr, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(srq, nullptr);
}

TEST_F(SrqTest, WithDefaultsHasReceiveCq) {
  struct rpma_srq* srq = nullptr;
  ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq), 0);
  struct rpma_cq* rcq = nullptr;
  ASSERT_EQ(rpma_srq_get_rcq(srq, &rcq), 0);
  EXPECT_NE(rcq, nullptr);
  int fd = -1;
  EXPECT_EQ(rpma_cq_get_fd(rcq, &fd), 0);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(rpma_srq_get_rcq(nullptr, &rcq), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_get_rcq(srq, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_delete(&srq), 0);
  EXPECT_EQ(srq, nullptr);
}

TEST_F(SrqTest, WithoutReceiveCqReportsNull) {
  struct rpma_srq_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
  ASSERT_EQ(rpma_srq_cfg_set_rcq_size(cfg, 0), 0);
  struct rpma_srq* srq = nullptr;
  ASSERT_EQ(rpma_srq_new(peer_, cfg, &srq), 0);
  struct rpma_cq* rcq = reinterpret_cast<struct rpma_cq*>(0x1);
  ASSERT_EQ(rpma_srq_get_rcq(srq, &rcq), 0);
  EXPECT_EQ(rcq, nullptr);
  rpma_srq_delete(&srq);
  rpma_srq_cfg_delete(&cfg);
}

TEST_F(SrqTest, DeleteRejectsNullAndAcceptsNullObject) {
  EXPECT_EQ(rpma_srq_delete(nullptr), RPMA_E_INVAL);
  struct rpma_srq* srq = nullptr;
  EXPECT_EQ(rpma_srq_delete(&srq), 0);
}

TEST_F(SrqTest, RecvChecksArgumentsAndFailsWhenFull) {
  struct rpma_srq_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
  ASSERT_EQ(rpma_srq_cfg_set_rq_size(cfg, 2), 0);
  struct rpma_srq* srq = nullptr;
  ASSERT_EQ(rpma_srq_new(peer_, cfg, &srq), 0);
  static char buf[64];
  struct rpma_mr_local* mr = nullptr;
  ASSERT_EQ(rpma_mr_reg(peer_, buf, sizeof(buf), RPMA_MR_USAGE_RECV, &mr), 0);
  EXPECT_EQ(rpma_srq_recv(nullptr, mr, 0, 8, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_recv(srq, nullptr, 1, 0, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_recv(srq, nullptr, 0, 1, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_recv(srq, nullptr, 0, 0, nullptr), 0);
  EXPECT_EQ(rpma_srq_recv(srq, mr, 0, 8, nullptr), 0);
  EXPECT_EQ(rpma_srq_recv(srq, mr, 8, 8, nullptr), RPMA_E_PROVIDER)
      << "an SRQ of 2 took a third receive";
  rpma_mr_dereg(&mr);
  rpma_srq_delete(&srq);
  rpma_srq_cfg_delete(&cfg);
}

}  // namespace
