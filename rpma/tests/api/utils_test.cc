// utils: device lookup, provider selection, ODP query, event strings.
#include <gtest/gtest.h>

#include <cstdlib>

#include "api_test_util.h"
#include "librpma.h"

namespace {

using rpma_test::kAddr;

class UtilsTest : public ::testing::Test {
 protected:
  void SetUp() override { rpma_test::UseTcp(); }
  void TearDown() override { rpma_test::UseTcp(); }
};

TEST_F(UtilsTest, GetIbvContextRejectsNullAddr) {
  struct ibv_context* ctx = nullptr;
  EXPECT_EQ(
      rpma_utils_get_ibv_context(nullptr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
      RPMA_E_INVAL);
}

TEST_F(UtilsTest, GetIbvContextRejectsNullOut) {
  EXPECT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, nullptr),
      RPMA_E_INVAL);
}

TEST_F(UtilsTest, GetIbvContextRejectsUnknownType) {
  struct ibv_context* ctx = nullptr;
  EXPECT_EQ(rpma_utils_get_ibv_context(
                kAddr, static_cast<enum rpma_util_ibv_context_type>(2), &ctx),
            RPMA_E_INVAL);
  EXPECT_EQ(ctx, nullptr);
}

TEST_F(UtilsTest, GetIbvContextGivesTcpContextForLoopback) {
  struct ibv_context* local = nullptr;
  struct ibv_context* remote = nullptr;
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &local),
      0);
  EXPECT_NE(local, nullptr);
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &remote),
      0);
  EXPECT_NE(remote, nullptr);
}

TEST_F(UtilsTest, GetIbvContextFailsWithProviderErrorOnBadAddress) {
  struct ibv_context* ctx = nullptr;
  EXPECT_EQ(rpma_utils_get_ibv_context("no-such-host.invalid",
                                       RPMA_UTIL_IBV_CONTEXT_REMOTE, &ctx),
            RPMA_E_PROVIDER);
  EXPECT_EQ(ctx, nullptr);
}

TEST_F(UtilsTest, GetIbvContextFailsOnUnknownProviderName) {
  setenv("RPMA_PROVIDER", "carrier-pigeon", 1);
  struct ibv_context* ctx = nullptr;
  EXPECT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx),
      RPMA_E_PROVIDER);
  EXPECT_EQ(ctx, nullptr);
}

TEST_F(UtilsTest, IsOdpCapableRejectsNull) {
  int odp = 7;
  EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(nullptr, &odp), RPMA_E_INVAL);
  struct ibv_context* ctx = nullptr;
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
  EXPECT_EQ(rpma_utils_ibv_context_is_odp_capable(ctx, nullptr), RPMA_E_INVAL);
}

TEST_F(UtilsTest, IsOdpCapableAnswersForTcpContext) {
  struct ibv_context* ctx = nullptr;
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx), 0);
  int odp = 7;
  ASSERT_EQ(rpma_utils_ibv_context_is_odp_capable(ctx, &odp), 0);
  EXPECT_TRUE(odp == 0 || odp == 1);
}

TEST_F(UtilsTest, ConnEvent2StrHasLibrpmaStrings) {
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_UNDEFINED),
               "Undefined connection event");
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_ESTABLISHED),
               "Connection established");
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_CLOSED),
               "Connection closed");
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_LOST), "Connection lost");
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_REJECTED),
               "Connection rejected");
  EXPECT_STREQ(rpma_utils_conn_event_2str(RPMA_CONN_UNREACHABLE),
               "Connection unreachable");
  EXPECT_STREQ(
      rpma_utils_conn_event_2str(static_cast<enum rpma_conn_event>(42)),
      "Unsupported connection event");
}

}  // namespace
