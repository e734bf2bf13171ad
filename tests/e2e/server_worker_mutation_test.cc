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

  // Writes kCommits records into g from *tail on and sends their COMMITs
  // (request ids 100...) without waiting, then one message of
  // `type`/`payload` (id 99).
  void PipelineCommitsThen(RawClient* c, const protocol::Accept& a,
                           const protocol::Grant& g, uint64_t* tail_io,
                           int round, protocol::Type type,
                           const std::string& payload) {
    uint64_t tail = *tail_io;
    for (int i = 0; i < kCommits; i++) {
      const std::string key =
          "k" + std::to_string(round) + "." + std::to_string(i);
      std::string rec = EncodeTestRecord(a.keyspace_id, key, "value");
      ASSERT_TRUE(c->Write(g.write_desc, tail - g.start, rec).ok());
      protocol::Commit cm;
      cm.segment = g.segment;
      cm.grant_id = g.grant_id;
      cm.offset = tail;
      cm.length = static_cast<uint32_t>(rec.size());
      cm.key_hash = index_format::HashKey(key);
      ASSERT_TRUE(c->SendMessage(protocol::Type::kCommit, CommitPayload(cm),
                                 static_cast<uint32_t>(100 + i))
                      .ok());
      tail += rec.size();
    }
    *tail_io = tail;
    ASSERT_TRUE(c->SendMessage(type, payload, 99).ok());
  }

  // The kCommits COMMIT_ACKs (ok, in order), then the reply to id 99,
  // whose payload goes to *last.
  void ExpectAcksThen(RawClient* c, int round, protocol::Type last_type,
                      std::string* last) {
    for (int i = 0; i <= kCommits; i++) {
      protocol::Header h;
      std::string payload;
      ASSERT_TRUE(c->ReceiveMessage(&h, &payload).ok()) << round << "." << i;
      if (i < kCommits) {
        ASSERT_EQ(h.type, protocol::Type::kCommitAck)
            << "round " << round << ": reply " << i
            << " is not a COMMIT_ACK: a later message overtook the commits";
        EXPECT_EQ(h.request_id, static_cast<uint32_t>(100 + i));
        protocol::CommitAck ack;
        ASSERT_TRUE(protocol::DecodeCommitAck(
                        reinterpret_cast<const uint8_t*>(payload.data()),
                        payload.size(), &ack)
                        .ok());
        EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
      } else {
        ASSERT_EQ(h.type, last_type);
        EXPECT_EQ(h.request_id, 99u);
        *last = payload;
      }
    }
  }

  static constexpr int kCommits = 8;
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
