// Worker-model tests written for mutants of tests/mutation/ that no other
// test killed (server/README.md, "Mutation check"): each names its
// mutant. KVSERVER_FAILPOINT=slow_pass makes every worker pass end with a
// short sleep, so a client's pipelined messages are handled in one batch
// (on an idle machine each would arrive, and be handled, alone).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerWorkerMutationTest : public ServerTest {
 protected:
  void StartSlowPasses(std::vector<std::string> flags) {
    setenv("KVSERVER_FAILPOINT", "slow_pass", 1);
    StartServer(flags);
    unsetenv("KVSERVER_FAILPOINT");
  }
};

// Mutant 152: COMMITs queued in a pass are committed (and acked) before
// any later message of the session is handled: an INFO pipelined behind
// them is answered after their acks.
TEST_F(ServerWorkerMutationTest, InfoBehindQueuedCommitsIsAnsweredLast) {
  StartSlowPasses({"--workers=1"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  if (HasFatalFailure()) return;
  ASSERT_GT(a.grant.size, 0u);
  uint64_t tail = a.grant.start;
  for (int round = 0; round < 10; round++) {
    PipelineCommitsThen(
        &c, a, a.grant, &tail, round, protocol::Type::kInfo,
        std::string(1, static_cast<char>(protocol::InfoTopic::kPing)));
    if (HasFatalFailure()) return;
    std::string last;
    ExpectAcksThen(&c, round, protocol::Type::kInfoAck, &last);
    if (HasFatalFailure()) return;
  }
}

// Mutant 88: a REFILL pipelined behind COMMITs seals their segment only
// after their commit point, and is answered after their acks.
TEST_F(ServerWorkerMutationTest, RefillBehindQueuedCommitsIsAnsweredLast) {
  StartSlowPasses(
      {"--workers=1", "--refill_rate=10000", "--refill_burst=1000"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  if (HasFatalFailure()) return;
  ASSERT_GT(a.grant.size, 0u);
  protocol::Grant g = a.grant;
  for (int round = 0; round < 10; round++) {
    uint64_t tail = g.start;
    PipelineCommitsThen(&c, a, g, &tail, round, protocol::Type::kRefill,
                        std::string(1, '\0'));
    if (HasFatalFailure()) return;
    std::string last;
    ExpectAcksThen(&c, round, protocol::Type::kRefillAck, &last);
    if (HasFatalFailure()) return;
    protocol::RefillAck ack;
    ASSERT_TRUE(
        protocol::DecodeRefillAck(reinterpret_cast<const uint8_t*>(last.data()),
                                  last.size(), a.segment_size, &ack)
            .ok());
    ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
    g = ack.grant;
  }
}

}  // namespace
}  // namespace kv::e2e
