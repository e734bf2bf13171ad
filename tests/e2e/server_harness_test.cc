// The e2e harness turns a ThreadSanitizer report in a child's log into a
// failing test process (server_process.h): a race in a kvserver must fail
// the test that started it even when the test ignores the server's exit
// code (most TearDowns do) or kills it. The children here are shell
// one-liners that write what TSan writes, so this runs in every build.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "server_process.h"

namespace kv::e2e {
namespace {

// TSan's report opening, as it prints it (halt_on_error=1 then exits 66).
constexpr char kReport[] =
    "printf '==================\\nWARNING: ThreadSanitizer: data race "
    "(pid=1)\\n  Read of size 8 at 0x7b0400000000 by thread T1:\\n' >&2; "
    "exit 66";

class HarnessSanitizerTest : public ::testing::Test {
 protected:
  // The parent runs threads (TSan's and gtest's): re-exec, do not fork.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(HarnessSanitizerTest, PlainLogIsNoReport) {
  EXPECT_FALSE(NoteSanitizerReport("kvserver: ready on 127.0.0.1:1\n", "x"));
  EXPECT_FALSE(NoteSanitizerReport("ThreadSanitizer is mentioned\n", "x"));
}

TEST_F(HarnessSanitizerTest, CleanChildLeavesTheExitStatusAlone) {
  EXPECT_EXIT(
      {
        std::string err;
        int code = RunToExit({"/bin/sh", "-c", "echo fine >&2"}, &err);
        exit(code == 0 && err == "fine\n" ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(HarnessSanitizerTest, ReportFromRunToExitFailsTheProcess) {
  EXPECT_EXIT(
      {
        std::string err;
        RunToExit({"/bin/sh", "-c", kReport}, &err);
        exit(0);  // the test "passed"; the harness overrides it
      },
      ::testing::ExitedWithCode(66),
      "/bin/sh \\(pid [0-9]+\\) reported a ThreadSanitizer race");
}

TEST_F(HarnessSanitizerTest, ReportFromAChildProcessFailsTheProcess) {
  EXPECT_EXIT(
      {
        ChildProcess child;
        if (!child.Start({"/bin/sh", "-c", kReport}).ok()) exit(4);
        // Returns once the child has exited (reaped there).
        child.WaitForOutput("never printed", std::chrono::seconds(10));
        exit(0);
      },
      ::testing::ExitedWithCode(66),
      "child pid [0-9]+ reported a ThreadSanitizer race");
}

}  // namespace
}  // namespace kv::e2e
