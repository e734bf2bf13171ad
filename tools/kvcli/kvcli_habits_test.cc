// Habits of redis-cli users (issue 22): -h HOST -p PORT, commands in any
// case, set/mset/del K…/exists K…, "did you mean", a flag missing its
// value, one-line usage errors, and in the shell Ctrl-C (clears the line,
// the shell and its parent go on), Ctrl-Z (still suspends), Ctrl-L and
// `clear`.
//
// Built into kvcli_test (real kvserver) and kvcli_shell_test (kvcli_fake),
// like kvcli_test.cc.
#include <gtest/gtest.h>

#include <algorithm>

#include "testing/kvcli_fixture.h"

namespace kv::kvcli {
namespace {

using testing::ProcessResult;
using testing::PtySession;
using testing::RunProcess;

size_t Lines(const std::string& s) {
  return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
}

// The address's host and port.
std::pair<std::string, std::string> Split(const std::string& address) {
  const size_t colon = address.rfind(':');
  return {address.substr(0, colon), address.substr(colon + 1)};
}

// ------------------------------------------------------------- -h and -p

TEST_F(KvcliTest, DashHAndDashPNameTheServer) {
  const auto [host, port] = Split(address_);
  ProcessResult r =
      RunProcess({KVCLI_PATH, "-h", host, "-p", port, "ping"}, "", Env());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("PONG ", 0), 0u) << r.out;
  // -h replaces only the host of --server, -p only its port.
  r = RunProcess(
      {KVCLI_PATH, "--server=nowhere.invalid:" + port, "-h", host, "ping"}, "",
      Env());
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string dead_port = Split(DeadAddress()).second;
  r = RunProcess({KVCLI_PATH, "--server=" + address_, "-p", dead_port, "ping"},
                 "", Env());
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot connect to " + host + ":" + dead_port),
            std::string::npos)
      << r.err;
}

TEST_F(KvcliTest, DashHAloneIsHelpAndHelpStaysHelp) {
  for (const char* flag : {"-h", "--help"}) {
    ProcessResult r = RunProcess({KVCLI_PATH, flag}, "", Env());
    EXPECT_EQ(r.code, 0) << flag;
    EXPECT_NE(r.out.find("-h HOST -p PORT"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("exit codes: 0 ok"), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

// ------------------------------------------------------- usage errors

TEST_F(KvcliTest, FlagMissingItsValueIsAUsageErrorNamingTheFlag) {
  struct Case {
    std::vector<std::string> argv;
    const char* err;
  } cases[] = {
      {{"--server", "get", "k1"},
       "kvcli: flag --server is missing its value (--server=VALUE); 'get' is "
       "a command (see kvcli --help)\n"},
      {{"--keyspace", "--raw", "get", "k"},
       "kvcli: flag --keyspace is missing its value (--keyspace=VALUE); "
       "'--raw' is a flag (see kvcli --help)\n"},
      {{"--server"}, "kvcli: flag --server needs a value"},
      {{"-h", "get", "k1"}, "kvcli: flag -h needs a HOST before the command"},
      {{"-h", "-p", "7400", "ping"}, "kvcli: flag -h needs a HOST"},
      {{"-p", "get", "k1"}, "kvcli: flag -p needs a PORT before the command"},
      {{"-p"}, "kvcli: flag -p needs a PORT"},
      {{"-p", "0", "ping"}, "kvcli: invalid value '0' for -p (a port"},
      {{"--server=nohost", "ping"},
       "kvcli: --server must be HOST:PORT (port 1-65535), not 'nohost'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {KVCLI_PATH};
    argv.insert(argv.end(), c.argv.begin(), c.argv.end());
    ProcessResult r = RunProcess(argv, "", Env());
    EXPECT_EQ(r.code, 2) << c.err << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(c.err, 0), 0u) << r.err;
    EXPECT_EQ(r.out, "") << c.err;
  }
}

TEST_F(KvcliTest, EveryUsageErrorIsOneLineThenSeeHelp) {
  const std::vector<std::vector<std::string>> cases = {
      {"--bogus", "ping"},
      {"--format=xml", "ping"},
      {"--timeout_ms=soon"},
      {"--server", "get", "k1"},
      {"-p", "x", "get", "k"},
      {"frob"},
      {"gte", "k"},
      {"get"},
      {"put", "k"},
      {"mput", "a", "1", "b"},
      {"scan", "p", "many"},
      {"help", "nosuch"},
      {"del"},
      {"exists"},
  };
  for (const auto& args : cases) {
    std::vector<std::string> argv = {KVCLI_PATH, "--server=" + address_};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv, "", Env());
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << args[0] << ": " << r.err;
    const std::string tail = "(see kvcli --help)\n";
    EXPECT_TRUE(r.err.size() > tail.size() &&
                r.err.compare(r.err.size() - tail.size(), tail.size(), tail) ==
                    0)
        << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("flags:"), std::string::npos) << "not the help";
    EXPECT_EQ(r.out, "") << args[0];
  }
}

// ------------------------------------------------------------- commands

TEST_F(KvcliTest, CommandsInAnyCaseAndRedisNames) {
  ProcessResult r = Cli({},
                        "SET a 1\n"
                        "Get a\n"
                        "Put b 2\n"
                        "MSET c 3 d 4\n"
                        "MGET a b c d\n"
                        "EXISTS a b nope\n"
                        "DEL a b nope\n"
                        "exists a\n"
                        "Delete c\n"
                        "exists c d\n");
  EXPECT_EQ(r.code, 1) << r.err;  // exists … nope, exists a → 1
  EXPECT_EQ(r.out,
            "OK\n"
            "1\n"
            "OK\n"
            "OK (2 keys)\n"
            "1\n2\n3\n4\n"
            "2\n"  // EXISTS a b nope: a count, as redis-cli in a pipe
            "2\n"  // DEL a b nope: how many existed
            "false\n"
            "OK\n"
            "1\n")
      << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Cli({}, "mset d 4\nexists d\nEXISTS d d\n").code, 0);  // all there
}

TEST_F(KvcliTest, SeveralKeyCountsInJsonAndTheCommandsOwnName) {
  ProcessResult r =
      Cli({}, "SET k v\nexists k nope\ndel k nope\n", {"--format=json"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out.rfind(R"({"command":"put","status":"ok")", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(R"({"command":"exists","status":"ok","count":1,)"
                       R"("keys":2})"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(R"({"command":"del","status":"ok","deleted":1,)"
                       R"("keys":2})"),
            std::string::npos)
      << r.out;
}

TEST_F(KvcliTest, OneShotDelAndExistsOfSeveralKeysPrintCounts) {
  if (!kRealServer) GTEST_SKIP() << "needs a server to keep the keys";
  ASSERT_EQ(Cli({"mset", "a", "1", "b", "2"}).code, 0);
  ProcessResult r = Cli({"exists", "a", "b"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
  r = Cli({"DEL", "a", "b", "zz"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "2\n");
  r = Cli({"exists", "a", "b"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "0\n");
}

TEST_F(KvcliTest, UnknownCommandSuggestsTheNearest) {
  ProcessResult r = Cli({"gte", "k"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err,
            "error: invalid_argument: unknown command 'gte': did you mean "
            "get? (see kvcli --help)\n");
  r = Cli({"PUTT", "k", "v"});
  EXPECT_NE(r.err.find("unknown command 'PUTT': did you mean put?"),
            std::string::npos)
      << r.err;
  r = Cli({"frob"});  // nothing near: no guess
  EXPECT_EQ(r.err,
            "error: invalid_argument: unknown command 'frob' (see "
            "kvcli --help)\n");
  r = Cli({"help", "mgte"});
  EXPECT_NE(r.err.find("did you mean mget?"), std::string::npos) << r.err;
  r = Cli({"help", "SET"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: put KEY VALUE"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------- shell

TEST_F(KvcliTest, InteractiveCtrlCClearsTheLineAndTheShellGoesOn) {
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("put half");
  ASSERT_TRUE(pty.Expect("put half")) << pty.transcript();
  pty.Type("\x03");  // Ctrl-C
  ASSERT_TRUE(pty.Expect("^C")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  // The half line is gone: "put halfping" would be a usage error.
  pty.Type("ping\r");
  ASSERT_TRUE(pty.Expect("PONG ")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("\x03");  // on an empty line too: a new prompt, no exit
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("GET nope\r");
  ASSERT_TRUE(pty.Expect("(not found)")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

// Under a script (tools/run.sh traps INT and stops its server), a Ctrl-C
// at the prompt must not reach the script: no SIGINT is sent at all.
TEST_F(KvcliTest, InteractiveCtrlCSendsNoSigintToTheParent) {
  PtySession pty;
  std::string cmd =
      "trap 'echo parent-got-SIGINT' INT; '" + std::string(KVCLI_PATH) + "'";
  for (const auto& f : Flags()) cmd += " '" + f + "'";
  cmd += "; echo kvcli-exit=$?";
  ASSERT_TRUE(pty.Start({"/bin/sh", "-c", cmd}, Env()));
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("get half");
  pty.Type("\x03");
  ASSERT_TRUE(pty.Expect("^C")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("quit\r");
  ASSERT_TRUE(pty.Expect("kvcli-exit=0")) << pty.transcript();
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
  EXPECT_EQ(pty.transcript().find("parent-got-SIGINT"), std::string::npos)
      << pty.transcript();
}

// Ctrl-C while a command runs (a slow scan: KVCLI_FAILPOINT=slow_scan)
// stops that command and brings the prompt back; kvcli goes on, and the
// parent (as tools/run.sh does: `trap : INT`) waits for it rather than
// exiting under it.
TEST_F(KvcliTest, InteractiveCtrlCStopsTheRunningCommandNotTheShell) {
  PtySession pty;
  std::vector<std::string> env = Env();
  env.push_back("KVCLI_FAILPOINT=slow_scan");
  std::string cmd = "trap : INT; '" + std::string(KVCLI_PATH) + "'";
  for (const auto& f : Flags()) cmd += " '" + f + "'";
  cmd += "; echo kvcli-exit=$?";
  ASSERT_TRUE(pty.Start({"/bin/sh", "-c", cmd}, env));
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  for (int i = 0; i < 20; i++) {
    pty.Type("put slowscan" + std::to_string(i) + " v\r");
    ASSERT_TRUE(pty.Expect("OK")) << pty.transcript();
    ASSERT_TRUE(ExpectPrompt(&pty));
  }
  pty.Type("scan slowscan 0\r");  // 20 keys x 200 ms: 4 s
  ASSERT_TRUE(pty.Expect("scan slowscan 0")) << pty.transcript();  // echo
  ASSERT_TRUE(pty.Expect(" v")) << pty.transcript();  // the first key
  pty.Type("\x03");
  ASSERT_TRUE(pty.Expect("interrupted by Ctrl-C")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("get slowscan3\r");
  ASSERT_TRUE(pty.Expect("v")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("quit\r");
  ASSERT_TRUE(pty.Expect("kvcli-exit=0")) << pty.transcript();
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

// With ISIG off at the prompt Ctrl-Z is a key as well: it must still
// suspend kvcli (job control of an interactive bash), and fg resumes it
// with the prompt and the line redrawn, still in edit mode.
TEST_F(KvcliTest, InteractiveCtrlZSuspendsAndFgResumes) {
  PtySession pty;
  std::vector<std::string> env = Env();
  env.push_back("PS1=BASH$ ");
  ASSERT_TRUE(pty.Start({"/bin/bash", "--norc", "--noprofile", "-i"}, env));
  ASSERT_TRUE(pty.Expect("BASH$ ")) << pty.transcript();
  std::string cmd = "'" + std::string(KVCLI_PATH) + "'";
  for (const auto& f : Flags()) cmd += " '" + f + "'";
  pty.Type(cmd + "\r");
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("get abc");
  ASSERT_TRUE(pty.Expect("get abc")) << pty.transcript();
  pty.Type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(pty.Expect("Stopped")) << pty.transcript();
  ASSERT_TRUE(pty.Expect("BASH$ ")) << pty.transcript();
  pty.Type("fg\r");
  ASSERT_TRUE(pty.Expect(Prompt() + "get abc")) << pty.transcript();
  ASSERT_TRUE(pty.WaitForRawMode()) << pty.transcript();
  pty.Type("\x03");  // still a key, not a signal
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("quit\r");
  ASSERT_TRUE(pty.Expect("BASH$ ")) << pty.transcript();
  pty.Type("echo kvcli-exit=$?\r");
  ASSERT_TRUE(pty.Expect("kvcli-exit=0")) << pty.transcript();
  pty.Type("exit\r");
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

TEST_F(KvcliTest, InteractiveCtrlLAndClearClearTheScreen) {
  PtySession pty;
  std::vector<std::string> argv = {KVCLI_PATH};
  for (const auto& f : Flags()) argv.push_back(f);
  std::vector<std::string> env = Env();
  env.push_back("TERM=xterm");  // its clear sequence: \e[H\e[2J
  ASSERT_TRUE(pty.Start(argv, env));
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("get k");
  ASSERT_TRUE(pty.Expect("get k"));
  pty.Type("\x0c");  // Ctrl-L: clear, then the prompt and the line again
  ASSERT_TRUE(pty.Expect("\x1b[2J")) << pty.transcript();
  ASSERT_TRUE(pty.Expect(Prompt() + "get k")) << pty.transcript();
  pty.Type("\x03");
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("clear\r");
  ASSERT_TRUE(pty.Expect("\x1b[H\x1b[2J")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("CLEAR\r");
  ASSERT_TRUE(pty.Expect("\x1b[H\x1b[2J")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

TEST_F(KvcliTest, InteractiveSuggestsAndCompletesAliases) {
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("gte k\r");
  ASSERT_TRUE(
      pty.Expect("unknown command 'gte': did you mean get? (type "
                 "help)"))
      << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("mse\t");
  ASSERT_TRUE(pty.Expect("t")) << pty.transcript();
  pty.Type(" k v\r");
  ASSERT_TRUE(pty.Expect("OK (1 keys)")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("EXISTS k nope\r");  // a count, shown as redis-cli does
  ASSERT_TRUE(pty.Expect("(integer) 1")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("HELP ke\t");  // HELP is help to completion too
  ASSERT_TRUE(pty.Expect("yspaces")) << pty.transcript();
  pty.Type("\r");
  ASSERT_TRUE(pty.Expect("usage: keyspaces")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

}  // namespace
}  // namespace kv::kvcli
