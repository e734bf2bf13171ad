// Refused COMMITs leave a trace in the server's log: a summary line per
// interval with the count and the first reason, never one line each
// (before: 69,153 refused commits left nothing).
#include <regex>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using ServerRefusalLogTest = ServerTest;

TEST_F(ServerRefusalLogTest, RefusedCommitsAreSummarizedNotLoggedEach) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  constexpr int kRefused = 50;
  for (int i = 0; i < kRefused; i++) {
    protocol::Commit cm;  // names no grant of this connection
    cm.segment = a.grant.segment + 1000;
    cm.grant_id = 12345;
    cm.length = 64;
    EXPECT_EQ(Commit(&c, cm, 10 + i).status, StatusCode::kInvalidArgument);
  }
  ASSERT_EQ(server_.Stop(), 0);
  const std::string log = server_.StderrText();
  const std::regex line(
      R"((\d+) COMMITs refused in the last [0-9.]+ s; the first: ([^\n]*))");
  long long total = 0;
  int lines = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end;
       ++it) {
    total += std::stoll((*it)[1]);
    lines++;
    EXPECT_NE((*it)[2].str().find("not this connection's grant"),
              std::string::npos)
        << (*it)[0];
  }
  EXPECT_EQ(total, kRefused) << log;
  EXPECT_GE(lines, 1);
  EXPECT_LT(lines, 10) << "one line per refusal, or close to it";
}

}  // namespace
}  // namespace kv::e2e
