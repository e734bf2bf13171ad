// peer_cfg, conn_cfg and srq_cfg: defaults, round trips and every error.
#include <gtest/gtest.h>

#include <cstdint>

#include "librpma.h"

namespace {

// ---- peer_cfg ----

TEST(PeerCfgTest, NewRejectsNullOut) {
  EXPECT_EQ(rpma_peer_cfg_new(nullptr), RPMA_E_INVAL);
}

TEST(PeerCfgTest, DefaultIsNoDirectWriteToPmem) {
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  bool supported = true;
  EXPECT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, &supported), 0);
  EXPECT_FALSE(supported);
  EXPECT_EQ(rpma_peer_cfg_delete(&pcfg), 0);
  EXPECT_EQ(pcfg, nullptr);
}

TEST(PeerCfgTest, DeleteRejectsNullAndAcceptsNullObject) {
  EXPECT_EQ(rpma_peer_cfg_delete(nullptr), RPMA_E_INVAL);
  struct rpma_peer_cfg* pcfg = nullptr;
  EXPECT_EQ(rpma_peer_cfg_delete(&pcfg), 0);
}

TEST(PeerCfgTest, SetGetRejectNull) {
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  bool b = false;
  EXPECT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(nullptr, true),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(nullptr, &b), RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, nullptr),
            RPMA_E_INVAL);
  ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), 0);
  ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, &b), 0);
  EXPECT_TRUE(b);
  rpma_peer_cfg_delete(&pcfg);
}

TEST(PeerCfgTest, DescriptorIsOneByteAndRoundTrips) {
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  size_t size = 0;
  ASSERT_EQ(rpma_peer_cfg_get_descriptor_size(pcfg, &size), 0);
  EXPECT_EQ(size, 1u);
  uint8_t desc[2] = {0xaa, 0xbb};
  ASSERT_EQ(rpma_peer_cfg_set_direct_write_to_pmem(pcfg, true), 0);
  ASSERT_EQ(rpma_peer_cfg_get_descriptor(pcfg, desc), 0);
  EXPECT_EQ(desc[0], 1);
  EXPECT_EQ(desc[1], 0xbb) << "wrote past the 1-byte descriptor";
  struct rpma_peer_cfg* copy = nullptr;
  ASSERT_EQ(rpma_peer_cfg_from_descriptor(desc, sizeof(desc), &copy), 0);
  bool b = false;
  ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(copy, &b), 0);
  EXPECT_TRUE(b);
  rpma_peer_cfg_delete(&copy);
  rpma_peer_cfg_delete(&pcfg);
}

TEST(PeerCfgTest, FromDescriptorTreatsAnyNonZeroAsTrue) {
  uint8_t desc = 7;
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_from_descriptor(&desc, 1, &pcfg), 0);
  bool b = false;
  ASSERT_EQ(rpma_peer_cfg_get_direct_write_to_pmem(pcfg, &b), 0);
  EXPECT_TRUE(b);
  rpma_peer_cfg_delete(&pcfg);
}

TEST(PeerCfgTest, DescriptorFunctionsRejectNull) {
  struct rpma_peer_cfg* pcfg = nullptr;
  ASSERT_EQ(rpma_peer_cfg_new(&pcfg), 0);
  uint8_t desc = 0;
  size_t size = 0;
  EXPECT_EQ(rpma_peer_cfg_get_descriptor(nullptr, &desc), RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_get_descriptor(pcfg, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_get_descriptor_size(nullptr, &size), RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_get_descriptor_size(pcfg, nullptr), RPMA_E_INVAL);
  struct rpma_peer_cfg* out = nullptr;
  EXPECT_EQ(rpma_peer_cfg_from_descriptor(nullptr, 1, &out), RPMA_E_INVAL);
  EXPECT_EQ(rpma_peer_cfg_from_descriptor(&desc, 1, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(out, nullptr);
  rpma_peer_cfg_delete(&pcfg);
}

TEST(PeerCfgTest, FromDescriptorRejectsEmptyDescriptor) {
  uint8_t desc = 1;
  struct rpma_peer_cfg* out = nullptr;
  EXPECT_EQ(rpma_peer_cfg_from_descriptor(&desc, 0, &out), RPMA_E_INVAL);
  EXPECT_EQ(out, nullptr);
}

// ---- conn_cfg ----

class ConnCfgTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(rpma_conn_cfg_new(&cfg_), 0); }
  void TearDown() override {
    EXPECT_EQ(rpma_conn_cfg_delete(&cfg_), 0);
    EXPECT_EQ(cfg_, nullptr);
  }
  struct rpma_conn_cfg* cfg_ = nullptr;
};

TEST_F(ConnCfgTest, NewAndDeleteRejectNull) {
  EXPECT_EQ(rpma_conn_cfg_new(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_delete(nullptr), RPMA_E_INVAL);
  struct rpma_conn_cfg* none = nullptr;
  EXPECT_EQ(rpma_conn_cfg_delete(&none), 0);
}

TEST_F(ConnCfgTest, DefaultsAreLibrpmas) {
  int timeout = 0;
  uint32_t v = 99;
  bool shared = true;
  struct rpma_srq* srq = reinterpret_cast<struct rpma_srq*>(0x1);
  ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &timeout), 0);
  EXPECT_EQ(timeout, RPMA_DEFAULT_TIMEOUT_MS);
  EXPECT_EQ(timeout, 1000);
  ASSERT_EQ(rpma_conn_cfg_get_cq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 10u);
  ASSERT_EQ(rpma_conn_cfg_get_rcq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 0u);
  ASSERT_EQ(rpma_conn_cfg_get_sq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 10u);
  ASSERT_EQ(rpma_conn_cfg_get_rq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 10u);
  ASSERT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, &shared), 0);
  EXPECT_FALSE(shared);
  ASSERT_EQ(rpma_conn_cfg_get_srq(cfg_, &srq), 0);
  EXPECT_EQ(srq, nullptr);
}

TEST_F(ConnCfgTest, SettersRoundTripIncludingZero) {
  uint32_t v = 99;
  ASSERT_EQ(rpma_conn_cfg_set_cq_size(cfg_, 0), 0);
  ASSERT_EQ(rpma_conn_cfg_get_cq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 0u);
  ASSERT_EQ(rpma_conn_cfg_set_rcq_size(cfg_, 7), 0);
  ASSERT_EQ(rpma_conn_cfg_get_rcq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 7u);
  ASSERT_EQ(rpma_conn_cfg_set_sq_size(cfg_, 33), 0);
  ASSERT_EQ(rpma_conn_cfg_get_sq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 33u);
  ASSERT_EQ(rpma_conn_cfg_set_rq_size(cfg_, 44), 0);
  ASSERT_EQ(rpma_conn_cfg_get_rq_size(cfg_, &v), 0);
  EXPECT_EQ(v, 44u);
  ASSERT_EQ(rpma_conn_cfg_set_timeout(cfg_, 0), 0);
  int t = -1;
  ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &t), 0);
  EXPECT_EQ(t, 0);
  bool shared = false;
  ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg_, true), 0);
  ASSERT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, &shared), 0);
  EXPECT_TRUE(shared);
}

TEST_F(ConnCfgTest, SetTimeoutRejectsNegative) {
  EXPECT_EQ(rpma_conn_cfg_set_timeout(cfg_, -1), RPMA_E_INVAL);
  int t = 0;
  ASSERT_EQ(rpma_conn_cfg_get_timeout(cfg_, &t), 0);
  EXPECT_EQ(t, 1000);
}

TEST_F(ConnCfgTest, SettersRejectNullCfg) {
  EXPECT_EQ(rpma_conn_cfg_set_timeout(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_set_cq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_set_rcq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_set_sq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_set_rq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_set_compl_channel(nullptr, true), RPMA_E_INVAL);
  EXPECT_EQ(
      rpma_conn_cfg_set_srq(nullptr, reinterpret_cast<struct rpma_srq*>(0x1)),
      RPMA_E_INVAL);
}

TEST_F(ConnCfgTest, SetSrqRejectsNullSrq) {
  EXPECT_EQ(rpma_conn_cfg_set_srq(cfg_, nullptr), RPMA_E_INVAL);
}

TEST_F(ConnCfgTest, GettersRejectNull) {
  int t = 0;
  uint32_t v = 0;
  bool b = false;
  struct rpma_srq* srq = nullptr;
  EXPECT_EQ(rpma_conn_cfg_get_timeout(nullptr, &t), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_timeout(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_cq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_cq_size(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_rcq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_rcq_size(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_sq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_sq_size(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_rq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_rq_size(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_compl_channel(nullptr, &b), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_compl_channel(cfg_, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_srq(nullptr, &srq), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_cfg_get_srq(cfg_, nullptr), RPMA_E_INVAL);
}

// ---- srq_cfg ----

TEST(SrqCfgTest, DefaultsAreTheImplementations20And20) {
  struct rpma_srq_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
  uint32_t v = 0;
  ASSERT_EQ(rpma_srq_cfg_get_rq_size(cfg, &v), 0);
  EXPECT_EQ(v, 20u);
  ASSERT_EQ(rpma_srq_cfg_get_rcq_size(cfg, &v), 0);
  EXPECT_EQ(v, 20u);
  ASSERT_EQ(rpma_srq_cfg_set_rq_size(cfg, 5), 0);
  ASSERT_EQ(rpma_srq_cfg_set_rcq_size(cfg, 0), 0);
  ASSERT_EQ(rpma_srq_cfg_get_rq_size(cfg, &v), 0);
  EXPECT_EQ(v, 5u);
  ASSERT_EQ(rpma_srq_cfg_get_rcq_size(cfg, &v), 0);
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(rpma_srq_cfg_delete(&cfg), 0);
  EXPECT_EQ(cfg, nullptr);
}

TEST(SrqCfgTest, EveryFunctionRejectsNull) {
  struct rpma_srq_cfg* cfg = nullptr;
  EXPECT_EQ(rpma_srq_cfg_new(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_delete(nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_delete(&cfg), 0);
  ASSERT_EQ(rpma_srq_cfg_new(&cfg), 0);
  uint32_t v = 0;
  EXPECT_EQ(rpma_srq_cfg_set_rq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_set_rcq_size(nullptr, 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_get_rq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_get_rq_size(cfg, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_get_rcq_size(nullptr, &v), RPMA_E_INVAL);
  EXPECT_EQ(rpma_srq_cfg_get_rcq_size(cfg, nullptr), RPMA_E_INVAL);
  rpma_srq_cfg_delete(&cfg);
}

}  // namespace
