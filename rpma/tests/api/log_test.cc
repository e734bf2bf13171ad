// The log API: thresholds, custom function, default function's stderr.
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "librpma.h"

namespace {

struct Logged {
  enum rpma_log_level level;
  std::string file;
  std::string func;
  std::string message;
};
std::vector<Logged>* g_logged = nullptr;

void Capture(enum rpma_log_level level, const char* file_name,
             const int line_no, const char* function_name,
             const char* message_format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, message_format);
  vsnprintf(buf, sizeof(buf), message_format, ap);
  va_end(ap);
  if (g_logged != nullptr)
    g_logged->push_back({level, file_name ? file_name : "",
                         function_name ? function_name : "", buf});
}

// A call that logs an ERROR (a too short memory descriptor) and a DEBUG
// (a good one), without needing a device.
void LogSomething() {
  unsigned char desc[21] = {0};
  desc[20] = RPMA_MR_USAGE_READ_SRC;
  struct rpma_mr_remote* mr = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 20, &mr), RPMA_E_INVAL);
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &mr), 0);
  rpma_mr_remote_delete(&mr);
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { g_logged = &logged_; }
  void TearDown() override {
    g_logged = nullptr;
    rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION);
    rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_WARNING);
    rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_DISABLED);
  }
  std::vector<Logged> logged_;
};

TEST_F(LogTest, DefaultThresholdsAreWarningAndDisabled) {
  enum rpma_log_level level = RPMA_LOG_LEVEL_DEBUG;
  ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, &level), 0);
  EXPECT_EQ(level, RPMA_LOG_LEVEL_WARNING);
  ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_AUX, &level), 0);
  EXPECT_EQ(level, RPMA_LOG_DISABLED);
}

TEST_F(LogTest, SetThresholdRejectsUnknownThreshold) {
  EXPECT_EQ(
      rpma_log_set_threshold(RPMA_LOG_THRESHOLD_MAX, RPMA_LOG_LEVEL_DEBUG),
      RPMA_E_INVAL);
  EXPECT_EQ(rpma_log_set_threshold(static_cast<enum rpma_log_threshold>(-1),
                                   RPMA_LOG_LEVEL_DEBUG),
            RPMA_E_INVAL);
}

TEST_F(LogTest, SetThresholdRejectsUnknownLevel) {
  EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD,
                                   static_cast<enum rpma_log_level>(6)),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD,
                                   static_cast<enum rpma_log_level>(-2)),
            RPMA_E_INVAL);
}

TEST_F(LogTest, GetThresholdRejectsUnknownThresholdAndNullLevel) {
  enum rpma_log_level level;
  EXPECT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_MAX, &level),
            RPMA_E_INVAL);
  EXPECT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD, nullptr), RPMA_E_INVAL);
}

TEST_F(LogTest, ThresholdsRoundTrip) {
  ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_INFO),
            0);
  enum rpma_log_level level;
  ASSERT_EQ(rpma_log_get_threshold(RPMA_LOG_THRESHOLD_AUX, &level), 0);
  EXPECT_EQ(level, RPMA_LOG_LEVEL_INFO);
}

TEST_F(LogTest, CustomFunctionGetsMessagesUpToTheThreshold) {
  ASSERT_EQ(rpma_log_set_function(&Capture), 0);
  LogSomething();
  ASSERT_EQ(logged_.size(), 1u) << "DEBUG passed the WARNING threshold";
  EXPECT_EQ(logged_[0].level, RPMA_LOG_LEVEL_ERROR);
  EXPECT_NE(logged_[0].message.find("descriptor"), std::string::npos);
  EXPECT_EQ(logged_[0].func, "rpma_mr_remote_from_descriptor");
  EXPECT_EQ(logged_[0].file, "mr.cc");

  logged_.clear();
  ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_DEBUG),
            0);
  LogSomething();
  ASSERT_EQ(logged_.size(), 2u);
  EXPECT_EQ(logged_[1].level, RPMA_LOG_LEVEL_DEBUG);

  logged_.clear();
  ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_DISABLED), 0);
  LogSomething();
  EXPECT_TRUE(logged_.empty());
}

TEST_F(LogTest, DefaultFunctionIsRestoredByNull) {
  ASSERT_EQ(rpma_log_set_function(&Capture), 0);
  ASSERT_EQ(rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION), 0);
  LogSomething();
  EXPECT_TRUE(logged_.empty());
}

TEST_F(LogTest, DefaultFunctionWritesStderrOnlyUpToAuxThreshold) {
  testing::internal::CaptureStderr();
  LogSomething();  // aux DISABLED: nothing on stderr
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  ASSERT_EQ(
      rpma_log_set_threshold(RPMA_LOG_THRESHOLD_AUX, RPMA_LOG_LEVEL_ERROR), 0);
  testing::internal::CaptureStderr();
  LogSomething();
  std::string out = testing::internal::GetCapturedStderr();
  // "<Mon DD HH:MM:SS.uuuuuu> [<tid>] *ERROR* <file>: <line>: <func>: <msg>"
  std::regex re(
      "^[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} "
      "\\[[0-9]+\\] \\*ERROR\\* mr\\.cc: [0-9]+: "
      "rpma_mr_remote_from_descriptor: .*descriptor.*\n$");
  EXPECT_TRUE(std::regex_search(out, re)) << out;
}

TEST_F(LogTest, SetFunctionNeverFails) {
  EXPECT_EQ(rpma_log_set_function(nullptr), 0);
  EXPECT_EQ(rpma_log_set_function(&Capture), 0);
}

}  // namespace
