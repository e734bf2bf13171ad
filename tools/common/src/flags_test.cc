#include "kv/tools/flags.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

DEFINE_string(server, "127.0.0.1:7400", "server address");
DEFINE_bool(verbose, false, "say more");
DEFINE_uint32(count, 3, "how many");
DEFINE_double(ratio, 0.99, "a fraction");

namespace kv::tools {
namespace {

class ParseFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLAGS_server = "127.0.0.1:7400";
    FLAGS_verbose = false;
    FLAGS_count = 3;
  }
  // Runs ParseFlags over `args` (argv[0] added); positionals in *rest.
  std::optional<int> Parse(std::vector<std::string> args, bool before = false,
                           std::vector<std::string>* rest = nullptr) {
    args.insert(args.begin(), "tool");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = static_cast<int>(args.size());
    char** p = argv.data();
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    auto rc = ParseFlags(&argc, &p,
                         {.name = "tool",
                          .usage = "tool — does things\n",
                          .flags_before_positionals = before});
    out_ = testing::internal::GetCapturedStdout();
    err_ = testing::internal::GetCapturedStderr();
    if (rest) {
      rest->clear();
      for (int i = 1; i < argc; i++) rest->push_back(p[i]);
      EXPECT_EQ(p[argc], nullptr);
    }
    return rc;
  }
  std::string out_, err_;
};

TEST_F(ParseFlagsTest, SetsFlagsInEveryForm) {
  std::vector<std::string> rest;
  EXPECT_EQ(Parse({"--server=h:1", "-count", "7", "--verbose", "a", "b"}, false,
                  &rest),
            std::nullopt);
  EXPECT_EQ(FLAGS_server, "h:1");
  EXPECT_EQ(FLAGS_count, 7u);
  EXPECT_TRUE(FLAGS_verbose);
  EXPECT_EQ(rest, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Parse({"--noverbose"}), std::nullopt);
  EXPECT_FALSE(FLAGS_verbose);
  EXPECT_TRUE(err_.empty());
}

TEST_F(ParseFlagsTest, FlagsAnywhereUnlessStoppedAtFirstPositional) {
  std::vector<std::string> rest;
  EXPECT_EQ(Parse({"cmd", "--count=9", "-"}, false, &rest), std::nullopt);
  EXPECT_EQ(FLAGS_count, 9u);
  EXPECT_EQ(rest, (std::vector<std::string>{"cmd", "-"}));
  EXPECT_EQ(Parse({"--count=1", "put", "k", "-1", "--count=5"}, true, &rest),
            std::nullopt);
  EXPECT_EQ(FLAGS_count, 1u);
  EXPECT_EQ(rest, (std::vector<std::string>{"put", "k", "-1", "--count=5"}));
  EXPECT_EQ(Parse({"--", "--count=5"}, false, &rest), std::nullopt);
  EXPECT_EQ(FLAGS_count, 1u);
  EXPECT_EQ(rest, (std::vector<std::string>{"--count=5"}));
}

TEST_F(ParseFlagsTest, UnknownFlagIsUsageError) {
  EXPECT_EQ(Parse({"--bogus=1"}), kExitUsage);
  EXPECT_NE(err_.find("tool: unknown flag --bogus (see tool --help)"),
            std::string::npos)
      << err_;
  EXPECT_EQ(FLAGS_server, "127.0.0.1:7400");
}

TEST_F(ParseFlagsTest, GflagsInternalFlagsAreNotAccepted) {
  EXPECT_EQ(Parse({"--flagfile=/etc/passwd"}), kExitUsage);
  EXPECT_NE(err_.find("unknown flag --flagfile"), std::string::npos);
  EXPECT_EQ(Parse({"--fromenv=server"}), kExitUsage);
}

TEST_F(ParseFlagsTest, BadValueIsUsageError) {
  EXPECT_EQ(Parse({"--count=many"}), kExitUsage);
  EXPECT_NE(err_.find("invalid value 'many' for --count (expects uint32)"),
            std::string::npos)
      << err_;
  EXPECT_EQ(FLAGS_count, 3u);
  EXPECT_EQ(Parse({"--count"}), kExitUsage);
  EXPECT_NE(err_.find("--count needs a value"), std::string::npos) << err_;
  EXPECT_EQ(Parse({"--verbose=maybe"}), kExitUsage);
}

TEST_F(ParseFlagsTest, HelpShowsOwnFlagsOnly) {
  for (const char* h : {"--help", "-h", "-help", "--helpfull"}) {
    EXPECT_EQ(Parse({"--count=4", h, "--bogus"}), kExitOk) << h;
    EXPECT_EQ(out_.rfind("tool — does things\n", 0), 0u) << out_;
    EXPECT_NE(out_.find("--server=string"), std::string::npos) << out_;
    EXPECT_NE(out_.find("server address (default '127.0.0.1:7400')"),
              std::string::npos);
    EXPECT_NE(out_.find("--verbose "), std::string::npos);
    EXPECT_EQ(out_.find("flagfile"), std::string::npos) << out_;
    EXPECT_EQ(out_.find("tab_completion"), std::string::npos);
    EXPECT_NE(out_.find("a fraction (default 0.99)"), std::string::npos);
    EXPECT_TRUE(err_.empty());
  }
}

}  // namespace
}  // namespace kv::tools
