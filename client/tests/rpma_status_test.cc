#include "kv/client/rpma_status.h"

#include <gtest/gtest.h>
#include <librpma.h>

namespace kv::client {
namespace {

TEST(RpmaStatusTest, ZeroIsOk) { EXPECT_TRUE(StatusFromRpma(0, "x").ok()); }

TEST(RpmaStatusTest, MapsCodesAndNamesTheCall) {
  Status s = StatusFromRpma(RPMA_E_INVAL, "rpma_read");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "rpma_read: Invalid argument");
  EXPECT_EQ(StatusFromRpma(RPMA_E_PROVIDER, "c").code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromRpma(RPMA_E_NOMEM, "c").code(), StatusCode::kNoSpace);
  EXPECT_EQ(StatusFromRpma(RPMA_E_NO_COMPLETION, "c").code(),
            StatusCode::kBusy);
  EXPECT_EQ(StatusFromRpma(-5, "c").code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kv::client
