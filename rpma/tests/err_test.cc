#include <gtest/gtest.h>

#include "librpma.h"

namespace {

TEST(ErrTest, KnownCodesHaveLibrpmaStrings) {
  EXPECT_STREQ(rpma_err_2str(0), "Success");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_NOSUPP), "Not supported");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_PROVIDER), "Provider error occurred");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_NOMEM), "Out of memory");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_INVAL), "Invalid argument");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_NO_COMPLETION),
               "No next completion available");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_NO_EVENT), "No next event available");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_AGAIN), "Temporary error, try again");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_SHARED_CHANNEL),
               "Completion channel is shared");
  EXPECT_STREQ(rpma_err_2str(RPMA_E_NOT_SHARED_CHNL),
               "Completion channel is not shared");
}

TEST(ErrTest, UnknownCodesSayUnknownError) {
  EXPECT_STREQ(rpma_err_2str(RPMA_E_UNKNOWN), "Unknown error");
  EXPECT_STREQ(rpma_err_2str(-1), "Unknown error");
  EXPECT_STREQ(rpma_err_2str(42), "Unknown error");
}

TEST(ErrTest, ErrorValuesMatchLibrpma) {
  EXPECT_EQ(RPMA_E_UNKNOWN, -100000);
  EXPECT_EQ(RPMA_E_INVAL, -100004);
  EXPECT_EQ(RPMA_E_NOT_SHARED_CHNL, -100009);
}

}  // namespace
