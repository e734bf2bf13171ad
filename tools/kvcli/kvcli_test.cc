// kvcli end to end: one-shot, script and interactive mode (through a real
// pseudo-terminal), every exit code, history across sessions, completion,
// Ctrl-D, quoting and binary values.
//
// Built twice: kvcli_test runs build/bin/kvcli against a real kvserver on
// 127.0.0.1 (KVSERVER_PATH); kvcli_shell_test runs kvcli_fake, the same
// shell over an in-process fake client (testing/fake_client.cc), so the
// shell mechanics are tested even where no server can run. Tests that need
// what only a server gives (keys surviving between processes) skip there.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>

#include "testing/kvcli_fixture.h"

namespace kv::kvcli {
namespace {

using namespace std::chrono_literals;
using testing::MakeTempDir;
using testing::ProcessResult;
using testing::PtySession;
using testing::ReadFile;
using testing::RemoveTree;
using testing::RunProcess;
using testing::WriteFile;

// ---------------------------------------------------------------- --help

TEST_F(KvcliTest, HelpShowsUsageOwnFlagsAndExitCodes) {
  ProcessResult r = RunProcess({KVCLI_PATH, "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("exit codes: 0 ok, 1 not found, 2 usage error, 3 "
                       "connection or server error"),
            std::string::npos)
      << r.out;
  for (const char* flag : {"--server=string", "--keyspace=string", "--create",
                           "--access_key=string", "--format=string", "--raw"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(r.out.find("flagfile"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

// --------------------------------------------------------- exit code 2

TEST_F(KvcliTest, UsageErrorsExitTwo) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> flags;
    const char* err;
  } cases[] = {
      {{}, {"--bogus"}, "kvcli: unknown flag --bogus (see kvcli --help)"},
      {{}, {"--format=xml"}, "--format must be text or json"},
      {{}, {"--timeout_ms=soon"}, "invalid value 'soon' for --timeout_ms"},
      {{"frob"}, {}, "error: invalid_argument: unknown command 'frob'"},
      {{"get"}, {}, "usage: get KEY"},
      {{"put", "k"}, {}, "usage: put KEY VALUE"},
      {{"mput", "a", "1", "b"}, {}, "usage: mput KEY VALUE"},
      {{"scan", "p", "many"}, {}, "scan LIMIT must be a number"},
      {{"put", "k", "@/nonexistent/file"},
       {},
       "cannot read @/nonexistent/file"},
  };
  for (const Case& c : cases) {
    ProcessResult r = Cli(c.args, "", c.flags);
    EXPECT_EQ(r.code, 2) << c.err << "\n" << r.err;
    EXPECT_NE(r.err.find(c.err), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << c.err;
  }
}

// --------------------------------------------------------- exit code 3

TEST_F(KvcliTest, ServerNotRunningExitsThreeWithHint) {
  const std::string dead = DeadAddress();
  ProcessResult r =
      RunProcess({KVCLI_PATH, "--server=" + dead, "get", "k"}, "", Env());
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("error: unavailable: cannot connect to " + dead),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: start a server: bash tools/run.sh"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(KvcliTest, UnknownKeyspaceExitsThreeAndNamesCreate) {
  ProcessResult r = RunProcess(
      {KVCLI_PATH, "--server=" + address_, "--keyspace=missing", "get", "k"},
      "", Env());
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("error: not_found: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--create"), std::string::npos) << r.err;
}

TEST_F(KvcliTest, HelpNeedsNoServer) {
  ProcessResult r = RunProcess(
      {KVCLI_PATH, "--server=" + DeadAddress(), "help", "put"}, "", Env());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("usage: put KEY VALUE"), std::string::npos) << r.out;
}

// ---------------------------------------------------- one-shot, 0 and 1

TEST_F(KvcliTest, OneShotNotFoundExitsOne) {
  ProcessResult r = Cli({"get", "absent"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");  // stdout is not a terminal: only values go there
  EXPECT_EQ(r.err, "(not found)\n");
  r = Cli({"exists", "absent"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "false\n");
}

TEST_F(KvcliTest, OneShotPutThenGetInAnotherProcess) {
  if (!kRealServer) GTEST_SKIP() << "needs a server to keep the key";
  ProcessResult r = Cli({"put", "k", "-1 with spaces"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n");
  r = Cli({"get", "k"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "-1 with spaces\n");
  r = Cli({"exists", "k"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "true\n");
  r = Cli({"del", "k"});
  EXPECT_EQ(r.code, 0);
  r = Cli({"get", "k"});
  EXPECT_EQ(r.code, 1);
}

TEST_F(KvcliTest, OneShotValueFromFileAndRawOutput) {
  if (!kRealServer) GTEST_SKIP() << "needs a server to keep the key";
  std::string bin;
  for (int i = 0; i < 512; i++) bin += static_cast<char>(i * 7);
  WriteFile(home_ + "/v.bin", bin);
  ASSERT_EQ(Cli({"put", "bin", "@" + home_ + "/v.bin"}).code, 0);
  ProcessResult r = Cli({"get", "bin"}, "", {"--raw"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, bin);
  r = Cli({"get", "bin"}, "", {"--format=json"});
  EXPECT_NE(r.out.find("\"value_base64\":"), std::string::npos) << r.out;
  // \@ is a literal @.
  ASSERT_EQ(Cli({"put", "at", "\\@home"}).code, 0);
  EXPECT_EQ(Cli({"get", "at"}).out, "@home\n");
}

TEST_F(KvcliTest, ValueTooLargeIsUsageErrorWithTheLimit) {
  WriteFile(home_ + "/big", std::string(kRealServer ? (2u << 20) : 2000, 'x'));
  ProcessResult r = Cli({}, "put big @" + home_ + "/big\n");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("error: invalid_argument: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(kRealServer ? "1048576" : "1024"), std::string::npos)
      << r.err;
}

TEST_F(KvcliTest, CreateFlagCreatesTheKeyspace) {
  ProcessResult r =
      RunProcess({KVCLI_PATH, "--server=" + address_, "--keyspace=fresh",
                  "--create", "put", "k", "v"},
                 "", Env());
  ASSERT_EQ(r.code, 0) << r.err;
  if (!kRealServer) return;  // the fake keeps nothing between processes
  r = RunProcess(
      {KVCLI_PATH, "--server=" + address_, "--keyspace=fresh", "get", "k"}, "",
      Env());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "v\n");
}

TEST_F(KvcliTest, AccessKeyMissingOrWrongExitsThreeWithHint) {
  std::string keyspace = "secret";  // the fake wants key "k" for it
  std::string key = "k";
#ifdef KVSERVER_PATH
  keyspace = "default";
  key = "k-0123456789abcdef";  // kvserver wants at least 16 bytes
  ASSERT_EQ(server_.Stop(), 0);
  const std::string keys = home_ + "/access_keys";
  WriteFile(keys, "default " + key + "\n");
  chmod(keys.c_str(), 0600);
  Status st =
      server_.Start({"--pool=" + home_ + "/pool", "--access_keys=" + keys});
  ASSERT_TRUE(st.ok()) << st.ToString();
  address_ = server_.address();
#endif
  const std::vector<std::string> base = {KVCLI_PATH, "--server=" + address_,
                                         "--keyspace=" + keyspace};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  };
  ProcessResult r = RunProcess(with({"ping"}), "", Env());
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("error: permission_denied: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: this keyspace needs an access key: "
                       "--access_key=KEY or RPKV_ACCESS_KEY=KEY"),
            std::string::npos)
      << r.err;
  r = RunProcess(with({"--access_key=wrong", "ping"}), "", Env());
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("hint: check the key given with --access_key"),
            std::string::npos)
      << r.err;
  r = RunProcess(with({"--access_key=" + key, "ping"}), "", Env());
  EXPECT_EQ(r.code, 0) << r.err;
  std::vector<std::string> env = Env();
  env.push_back("RPKV_ACCESS_KEY=" + key);
  r = RunProcess(with({"ping"}), "", env);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("PONG ", 0), 0u) << r.out;
}

// ---------------------------------------------------------------- script

TEST_F(KvcliTest, ScriptModeRunsEveryLineWithoutPrompt) {
  ProcessResult r = Cli({},
                        "# a comment\n"
                        "put k1 v1\n"
                        "put \"key two\" 'value two'\n"
                        "put bin \"a\\x00b\"\n"
                        "\n"
                        "get k1\n"
                        "get \"key two\"\n"
                        "mput m1 x m2 y\n"
                        "mget m1 absent m2\n"
                        "del k1\n"
                        "exists k1\n"
                        "scan m1\n");
  EXPECT_EQ(r.code, 1) << r.err;  // exists k1 → 1 is the highest
  EXPECT_EQ(r.out,
            "OK\nOK\nOK\n"
            "v1\n"
            "value two\n"
            "OK (2 keys)\n"
            "x\n(not found)\ny\n"
            "OK\n"
            "false\n"
            "m1 x\n")
      << r.out;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("> "), std::string::npos);  // no prompt
  EXPECT_FALSE(std::ifstream(home_ + "/.rpkv_history").good());
}

TEST_F(KvcliTest, ScriptExitCodeIsTheHighestAndBadLinesAreUsageErrors) {
  ProcessResult r = Cli({}, "put a 1\nput \"unterminated\nget a\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "OK\n1\n");
  EXPECT_NE(r.err.find("unterminated \" quote at column 5"), std::string::npos)
      << r.err;
  r = Cli({}, "get nope\nquit\nput never 1\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(Cli({}, "exists never\n").code, 1);
}

// Script mode runs single-key lines as batches: the replies still come in
// input order, an error names its input line (comments and blank lines
// count), and a line on a key of the batch sees the earlier line done.
TEST_F(KvcliTest, ScriptPipelinesLinesButKeepsOrderAndLineNumbers) {
  std::string in = "# bulk load\n\n";  // lines 1 and 2
  std::string want;
  size_t line = 2;
  for (int i = 0; i < 3000; i++) {
    line++;
    if (line == 1234) {
      in += "put " + std::string(1100, 'x') + " v\n";  // a key too long
      continue;
    }
    in += "put k" + std::to_string(i) + " v" + std::to_string(i) + "\n";
    want += "OK\n";
  }
  in += "get k7\nput k7 new\nget k7\ndel k7\nget k7\n";
  want += "v7\nOK\nnew\nOK\n";
  ProcessResult r = Cli({}, in);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err.rfind("line 1234: error: invalid_argument: ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("line 3007: (not found)\n"), std::string::npos) << r.err;

  // --file reads the same script; --pipe prints only errors and a summary.
  const std::string path = home_ + "/load.txt";
  WriteFile(path, in);
  r = Cli({}, "", {"--file=" + path});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out, want);
  r = Cli({}, in, {"--pipe"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out.rfind("done: 3005 commands, 1 errors, 1 not found, 3007 "
                        "lines in ",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(r.err.rfind("line 1234: error: invalid_argument: ", 0), 0u)
      << r.err;
  if (kRealServer) EXPECT_EQ(Cli({"get", "k2999"}).out, "v2999\n");
  EXPECT_EQ(Cli({"get", "k1"}, "", {"--pipe"}).code, 2);  // no command
  EXPECT_EQ(Cli({}, "", {"--file=/nonexistent/x"}).code, 2);
}

// The same line numbers with --pipeline=1 (one line at a time) and in
// JSON, where an error carries "line".
TEST_F(KvcliTest, ScriptErrorLineNumbersWithoutBatchingAndInJson) {
  const std::string in = "put a 1\nput \"unterminated\nget nope\n";
  ProcessResult r = Cli({}, in, {"--pipeline=1"});
  EXPECT_EQ(r.out, "OK\n");
  EXPECT_EQ(r.err.rfind("line 2: error: invalid_argument: unterminated", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("line 3: (not found)"), std::string::npos) << r.err;
  r = Cli({}, in, {"--format=json"});
  EXPECT_NE(r.out.find(R"("line":2})"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(R"({"command":"get","status":"not_found","key":"nope"})"),
      std::string::npos)
      << r.out;
}

// ------------------------------------------------------------------ scan

// Lines of text, sorted (scan's order is the index's hash order).
std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t p = 0; p < text.size();) {
    size_t q = text.find('\n', p);
    if (q == std::string::npos) q = text.size();
    lines.push_back(text.substr(p, q - p));
    p = q + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

class KvcliScanTest : public KvcliTest {
 protected:
  // 1500 keys u0000..u1499 (more than a terminal's default LIMIT) and
  // one other.
  void SetUp() override {
    KvcliTest::SetUp();
    if (!kRealServer) GTEST_SKIP() << "keys must survive between processes";
    std::string in;
    for (int i = 0; i < 1500; i++) {
      char key[16];
      snprintf(key, sizeof(key), "u%04d", i);
      in += std::string("put ") + key + " v" + std::to_string(i) + "\n";
      want_.push_back(std::string(key) + " v" + std::to_string(i));
    }
    in += "put other x\n";
    std::sort(want_.begin(), want_.end());
    ASSERT_EQ(Cli({}, in, {"--pipe"}).code, 0);
  }
  std::vector<std::string> want_;
};

TEST_F(KvcliScanTest, InAPipeEverythingStreamsAndALimitSaysWhatItCut) {
  ProcessResult r = Cli({"scan", "u"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(SortedLines(r.out), want_);
  // A LIMIT that cuts: the keys it gives, a note on stderr, exit 1.
  r = Cli({"scan", "u", "5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(SortedLines(r.out).size(), 5u) << r.out;
  EXPECT_NE(r.err.find("scan: stopped at the limit of 5 keys; more keys "
                       "match"),
            std::string::npos)
      << r.err;
  // A LIMIT that cuts nothing is no truncation.
  r = Cli({"scan", "other", "5"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "other x\n");
  r = Cli({"scan", "u", "5"}, "", {"--format=json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(R"("count":5,"truncated":true)"), std::string::npos)
      << r.out;
}

TEST_F(KvcliScanTest, CursorPagesCoverEveryKeyAndEndAtZero) {
  std::set<std::string> keys;
  std::string cursor = "0";
  int pages = 0;
  do {
    ProcessResult r = Cli({"scan", cursor, "match", "u*", "COUNT", "200"});
    ASSERT_EQ(r.code, 0) << r.err;
    const size_t nl = r.out.find('\n');
    cursor = r.out.substr(0, nl);
    if (nl != std::string::npos) {
      for (const std::string& k : SortedLines(r.out.substr(nl + 1))) {
        if (!k.empty()) keys.insert(k);
      }
    }
    ASSERT_LT(++pages, 100) << "the cursor never reached 0";
  } while (cursor != "0");
  EXPECT_GT(pages, 1);  // 1500 keys do not fit one page of ~200
  EXPECT_EQ(keys.size(), 1500u);
  EXPECT_EQ(keys.count("other"), 0u);
  EXPECT_EQ(*keys.begin(), "u0000");
  // match with ? and a set; a cursor that is no cursor is a usage error.
  std::set<std::string> some;
  cursor = "0";
  do {
    ProcessResult r = Cli({"scan", cursor, "match", "u00[01]?"});
    ASSERT_EQ(r.code, 0) << r.err;
    const size_t nl = r.out.find('\n');
    cursor = r.out.substr(0, nl);
    if (nl != std::string::npos) {
      for (const std::string& k : SortedLines(r.out.substr(nl + 1))) {
        some.insert(k);
      }
    }
  } while (cursor != "0");
  EXPECT_EQ(some.size(), 20u);
  if (kRealServer) {
    ProcessResult r = Cli({"scan", "99999999999"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("is not a cursor of this keyspace"), std::string::npos)
        << r.err;
  }
  EXPECT_EQ(Cli({"scan", "0", "count", "0"}).code, 2);
  EXPECT_EQ(Cli({"scan", "0", "match"}).code, 2);
}

// dbsize counts the keyspace's keys; info shows its capacity used.
TEST_F(KvcliTest, DbsizeAndInfoShowKeysAndCapacity) {
  ProcessResult r = Cli({}, "put a 1\nput b 2\nput c 3\ndel b\ndbsize\ninfo\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("OK\n2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("keyspace default: 2 keys\n  capacity: log "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" bytes used ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", index 2 of "), std::string::npos) << r.out;
  // The index's geometry (it grows online): buckets, growths, load.
  EXPECT_NE(r.out.find("\n  index: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" buckets, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" growths, load 0.0"), std::string::npos) << r.out;
  r = Cli({"dbsize"}, "", {"--format=json"});
  EXPECT_EQ(r.out, kRealServer
                       ? R"({"command":"dbsize","status":"ok","keys":2})"
                         "\n"
                       : R"({"command":"dbsize","status":"ok","keys":0})"
                         "\n");
}

// Expiring keys: put ... ex/px, expire, pexpire, ttl, pttl, persist, as
// redis-cli users type them; bad times are refused and change nothing.
TEST_F(KvcliTest, ExpiringKeysAsRedisCliUsersTypeThem) {
  EXPECT_EQ(Cli({"ttl", "none"}).out, "-2\n");
  ProcessResult r =
      Cli({}, "put k v\nttl k\npersist k\nexpire none 60\nEXPIRE k 60\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n-1\n0\n0\n1\n");
  if (kRealServer) {  // the fake keeps keys per process
    r = Cli({"ttl", "k"});
    EXPECT_TRUE(r.out == "60\n" || r.out == "59\n") << r.out;
    EXPECT_EQ(Cli({"persist", "k"}).out, "1\n");
    EXPECT_EQ(Cli({"ttl", "k"}).out, "-1\n");
    EXPECT_EQ(Cli({"set", "s", "v", "EX", "100"}).code, 0);
    r = Cli({"pttl", "s"});
    const long ms = strtol(r.out.c_str(), nullptr, 10);
    EXPECT_GT(ms, 95'000) << r.out;
    EXPECT_LE(ms, 100'000);
    EXPECT_EQ(Cli({"get", "k"}).out, "v\n");
  }
  // In one process (script mode): a key put with px 300 is gone 400 ms on.
  r = Cli({}, "put p v px 300\nget p\npttl p\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 5), "OK\nv\n") << r.out;
  std::this_thread::sleep_for(400ms);
  if (kRealServer) {
    r = Cli({"get", "p"});
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_EQ(Cli({"ttl", "p"}).out, "-2\n");
  }
  r = Cli({"--format=json", "ttl", "k"});
  EXPECT_NE(r.out.find(R"("ttl":)"), std::string::npos) << r.out;
  // Bad input: a usage error (not an integer, a missing or unknown unit),
  // or the library's invalid_argument with the limits (zero, negative,
  // huge). Nothing is written.
  struct Bad {
    std::vector<std::string> args;
    const char* err;
  } bad[] = {
      {{"put", "k", "x", "ex"},
       "usage: put KEY VALUE [ex SECONDS | px MILLISECONDS]"},
      {{"put", "k", "x", "ex", "soon"}, "ex SECONDS must be an integer"},
      {{"put", "k", "x", "in", "5"}, "expected ex SECONDS or px MILLISECONDS"},
      {{"put", "k", "x", "ex", "0"},
       "invalid_argument: time to live must be 1 ms .. 100 years"},
      {{"put", "k", "x", "px", "-5"}, "got -5 ms"},
      {{"put", "k", "x", "ex", "99999999999999"}, "1 ms .. 100 years"},
      {{"expire", "k", "0"}, "expire: time to live must be"},
      {{"expire", "k", "-1"}, "got -1000 ms"},
      {{"expire", "k", "x"}, "ex SECONDS must be an integer"},
  };
  for (const Bad& b : bad) {
    r = Cli(b.args);
    EXPECT_EQ(r.code, 2) << b.args[3 < b.args.size() ? 3 : 2] << ": " << r.err;
    EXPECT_NE(r.err.find(b.err), std::string::npos)
        << "want '" << b.err << "', got: " << r.err;
  }
  if (kRealServer) {
    EXPECT_EQ(Cli({"get", "k"}).out, "v\n");
    EXPECT_EQ(Cli({"ttl", "k"}).out, "-1\n");
  }
}

// incr/incrby/append from 8 kvcli processes at once: the counter ends at
// the exact sum, the appended value holds every suffix.
TEST_F(KvcliTest, IncrFromEightProcessesEndsAtTheExactSum) {
  ProcessResult r = Cli({"incrby", "n", "5"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "5\n");
  r = Cli({"append", "s", "ab"});
  EXPECT_EQ(r.out, "2\n");
  r = Cli({}, "put t text\nincr t\n");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("line 2: error: invalid_argument: incr: the value is "
                       "not an integer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Cli({"incrby", "n", "x"}).code, 2);
  if (!kRealServer) return;  // the fake keeps keys per process
#ifdef KVSERVER_PATH
  // Eight writers at once each hold a log segment: a pool of small
  // segments, so that the keyspace's grant share has room for them all.
  ASSERT_EQ(server_.Stop(), 0);
  Status st = server_.Start(
      {"--pool=" + home_ + "/pool8", "--pool_size=64M", "--segment_size=64K"});
  ASSERT_TRUE(st.ok()) << st.ToString();
  address_ = server_.address();
#endif

  std::string script;
  for (int i = 0; i < 25; i++) script += "incr c\nappend s x\n";
  std::vector<std::thread> threads;
  std::vector<ProcessResult> results(8);
  for (int i = 0; i < 8; i++) {
    threads.emplace_back([&, i] { results[i] = Cli({}, script); });
  }
  for (auto& t : threads) t.join();
  for (const ProcessResult& p : results) EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_EQ(Cli({"get", "c"}).out, "200\n");
  EXPECT_EQ(Cli({"get", "s"}).out, std::string(200, 'x') + "\n");
}

TEST_F(KvcliTest, JsonIsOneObjectPerReply) {
  ProcessResult r = Cli({}, "put k v\nget k\nget nope\nmget k nope\nping\n",
                        {"--format=json"});
  EXPECT_EQ(r.code, 1);
  std::vector<std::string> lines;
  for (size_t p = 0; p < r.out.size();) {
    size_t q = r.out.find('\n', p);
    lines.push_back(r.out.substr(p, q - p));
    p = q + 1;
  }
  ASSERT_EQ(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0].rfind(R"({"command":"put","status":"ok","version":)", 0),
            0u);
  EXPECT_EQ(lines[1],
            R"({"command":"get","status":"ok","key":"k","value":"v"})");
  EXPECT_EQ(lines[2], R"({"command":"get","status":"not_found","key":"nope"})");
  EXPECT_EQ(lines[3], R"({"command":"mget","status":"ok","results":[)"
                      R"({"key":"k","status":"ok","value":"v"},)"
                      R"({"key":"nope","status":"not_found"}]})");
  EXPECT_EQ(lines[4].rfind(R"({"command":"ping","status":"ok","rtt_us":)", 0),
            0u);
  EXPECT_EQ(r.err, "");
}

// ----------------------------------------------------------- interactive

TEST_F(KvcliTest, InteractivePromptPutGetAndCtrlD) {
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("put greeting \"hello world\"\r");
  ASSERT_TRUE(pty.Expect("OK")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("get greeting\r");
  ASSERT_TRUE(pty.Expect("hello world")) << pty.transcript();
  pty.Type("put b \"a\\x00\\x1b[2Jb\"\r");
  ASSERT_TRUE(pty.Expect("OK"));
  pty.Type("get b\r");  // binary is shown escaped on a terminal
  ASSERT_TRUE(pty.Expect("\"a\\x00\\x1b[2Jb\"")) << pty.transcript();
  pty.Type("get nope\r");
  ASSERT_TRUE(pty.Expect("(not found)")) << pty.transcript();
  pty.Type("frob\r");
  ASSERT_TRUE(pty.Expect("unknown command 'frob' (type help)"));
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("\x04");  // Ctrl-D on an empty line leaves
  EXPECT_EQ(pty.Wait(), 0) << pty.transcript();
}

TEST_F(KvcliTest, InteractiveQuitAndExit) {
  for (const char* word : {"quit", "exit"}) {
    PtySession pty;
    StartShell(&pty);
    ASSERT_TRUE(ExpectPrompt(&pty));
    pty.Type(std::string(word) + "\r");
    EXPECT_EQ(pty.Wait(), 0) << word << pty.transcript();
  }
}

TEST_F(KvcliTest, InteractiveTabCompletesCommands) {
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("pi\t");
  ASSERT_TRUE(pty.Expect("ng")) << pty.transcript();
  pty.Type("\r");
  ASSERT_TRUE(pty.Expect("PONG ")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("help ke\t");
  ASSERT_TRUE(pty.Expect("yspaces")) << pty.transcript();
  pty.Type("\r");
  ASSERT_TRUE(pty.Expect("usage: keyspaces")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0);
}

TEST_F(KvcliTest, InteractiveHistorySurvivesSessions) {
  {
    PtySession pty;
    StartShell(&pty);
    ASSERT_TRUE(ExpectPrompt(&pty));
    pty.Type("put remembered 42\r");
    ASSERT_TRUE(pty.Expect("OK"));
    ASSERT_TRUE(ExpectPrompt(&pty));
    pty.Type("\x04");
    ASSERT_EQ(pty.Wait(), 0) << pty.transcript();
  }
  const std::string history = ReadFile(home_ + "/.rpkv_history");
  EXPECT_NE(history.find("remembered"), std::string::npos) << history;
  struct stat st;
  ASSERT_EQ(stat((home_ + "/.rpkv_history").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u) << "history may hold values: owner only";
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("\x1b[A");  // up arrow recalls the last session's line
  ASSERT_TRUE(pty.Expect("put remembered 42")) << pty.transcript();
  pty.Type("\r");
  ASSERT_TRUE(pty.Expect("OK")) << pty.transcript();
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0);
}

TEST_F(KvcliTest, InteractiveWithoutServerSaysSoAndStillHelps) {
  const std::string dead = DeadAddress();
  PtySession pty;
  ASSERT_TRUE(pty.Start({KVCLI_PATH, "--server=" + dead}, Env()));
  ASSERT_TRUE(pty.Expect("cannot connect to " + dead)) << pty.transcript();
  ASSERT_TRUE(pty.Expect("hint: ")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty, dead + "/default (not connected)> "))
      << pty.transcript();
  pty.Type("help\r");
  ASSERT_TRUE(pty.Expect("quit")) << pty.transcript();
  pty.Type("get k\r");
  ASSERT_TRUE(pty.Expect("cannot connect to " + dead)) << pty.transcript();
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0);
}

TEST_F(KvcliTest, InteractiveUseSwitchesKeyspaceAndPrompt) {
  PtySession pty;
  StartShell(&pty);
  ASSERT_TRUE(ExpectPrompt(&pty));
  pty.Type("put k here\r");
  ASSERT_TRUE(pty.Expect("OK"));
  pty.Type("use missing\r");  // a failed use keeps the current keyspace
  ASSERT_TRUE(pty.Expect("--create")) << pty.transcript();
  ASSERT_TRUE(ExpectPrompt(&pty)) << pty.transcript();
  pty.Type("get k\r");
  ASSERT_TRUE(pty.Expect("here")) << pty.transcript();
  pty.Type("quit\r");
  EXPECT_EQ(pty.Wait(), 0);
}

}  // namespace
}  // namespace kv::kvcli
