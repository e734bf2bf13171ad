// KvcliTest — the fixture of kvcli's process and pty tests (kvcli_test.cc,
// kvcli_habits_test.cc): a fresh kvserver per test when KVSERVER_PATH is
// defined (kvcli_test), else the in-process fake behind kvcli_fake
// (kvcli_shell_test). KVCLI_PATH names the kvcli binary under test.
#ifndef KV_TOOLS_KVCLI_TESTING_KVCLI_FIXTURE_H_
#define KV_TOOLS_KVCLI_TESTING_KVCLI_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include "pty_session.h"
#include "run_process.h"
#ifdef KVSERVER_PATH
#include "server_process.h"  // tests/e2e: a real kvserver on a free port
#endif

#ifndef KVCLI_PATH
#error "KVCLI_PATH must name the kvcli binary under test"
#endif

namespace kv::kvcli {

#ifdef KVSERVER_PATH
constexpr bool kRealServer = true;
#else
constexpr bool kRealServer = false;
#endif

class KvcliTest : public ::testing::Test {
 protected:
  // A fresh kvserver per test (it creates its pool with keyspace
  // "default"; --allow_create for the --create test).
  void SetUp() override {
    home_ = testing::MakeTempDir("kvcli-home");
    ASSERT_FALSE(home_.empty());
#ifdef KVSERVER_PATH
    Status st = server_.Start(
        {"--pool=" + home_ + "/pool", "--pool_size=64M", "--allow_create"});
    ASSERT_TRUE(st.ok()) << st.ToString();
    address_ = server_.address();
#else
    address_ = "127.0.0.1:7400";
#endif
  }
  void TearDown() override {
#ifdef KVSERVER_PATH
    if (server_.running()) EXPECT_EQ(server_.Stop(), 0);
#endif
    testing::RemoveTree(home_);
  }

  std::vector<std::string> Flags() const {
    return {"--server=" + address_, "--keyspace=" + keyspace_};
  }
  std::vector<std::string> Env() const { return {"HOME=" + home_}; }
  // Runs kvcli with Flags() + args; stdin from `input` (script mode when
  // args are empty).
  testing::ProcessResult Cli(std::vector<std::string> args,
                             const std::string& input = "",
                             std::vector<std::string> flags = {}) const {
    std::vector<std::string> argv = {KVCLI_PATH};
    for (const auto& f : Flags()) argv.push_back(f);
    for (const auto& f : flags) argv.push_back(f);
    for (auto& a : args) argv.push_back(a);
    return testing::RunProcess(argv, input, Env());
  }
  // A server address nothing listens on.
  std::string DeadAddress() const {
#ifdef KVSERVER_PATH
    return "127.0.0.1:" + std::to_string(e2e::PickFreePort());
#else
    return "127.0.0.1:1";
#endif
  }
  std::string Prompt() const { return address_ + "/" + keyspace_ + "> "; }
  // The prompt is shown and the line editor reads (see WaitForRawMode).
  bool ExpectPrompt(testing::PtySession* pty, const std::string& prompt = "") {
    return pty->Expect(prompt.empty() ? Prompt() : prompt) &&
           pty->WaitForRawMode();
  }
  // Starts the shell on a pty and waits for its first prompt.
  void StartShell(testing::PtySession* pty,
                  std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {KVCLI_PATH};
    for (const auto& f : Flags()) argv.push_back(f);
    for (auto& f : flags) argv.push_back(f);
    ASSERT_TRUE(pty->Start(argv, Env()));
  }

#ifdef KVSERVER_PATH
  e2e::ServerProcess server_;
#endif
  std::string address_, home_, keyspace_ = "default";
};

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_TESTING_KVCLI_FIXTURE_H_
