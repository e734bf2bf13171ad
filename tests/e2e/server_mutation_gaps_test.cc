// Server tests written for mutants of tests/mutation/ that no other test
// killed (server/README.md, "Mutation check"): each names its mutant.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

class ServerMutationGapsTest : public ServerTest {};

// Mutant 88: a REFILL among pipelined COMMITs that the session reaps in
// one batch must first bring the group to its commit point and send its
// acks: the REFILL seals the segment the commits are in. Each round
// writes 8 records, sends their COMMITs and a REFILL without waiting, and
// expects the 8 COMMIT_ACKs (ok) before the REFILL_ACK. (Correct code
// orders them always; the mutant shows whenever a batch holds both.)
TEST_F(ServerMutationGapsTest, RefillAmongPipelinedCommitsIsAnsweredLast) {
  StartServer({"--refill_rate=10000", "--refill_burst=1000"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  ASSERT_GT(a.grant.size, 0u);
  protocol::Grant g = a.grant;
  constexpr int kRounds = 20, kCommits = 8;
  for (int round = 0; round < kRounds; round++) {
    uint64_t tail = g.start;
    for (int i = 0; i < kCommits; i++) {
      const std::string key =
          "k" + std::to_string(round) + "." + std::to_string(i);
      std::string rec = EncodeTestRecord(a.keyspace_id, key, "value");
      ASSERT_TRUE(c.Write(g.write_desc, tail - g.start, rec).ok());
      protocol::Commit cm;
      cm.segment = g.segment;
      cm.grant_id = g.grant_id;
      cm.offset = tail;
      cm.length = static_cast<uint32_t>(rec.size());
      cm.key_hash = index_format::HashKey(key);
      ASSERT_TRUE(c.SendMessage(protocol::Type::kCommit, CommitPayload(cm),
                                static_cast<uint32_t>(100 + i))
                      .ok());
      tail += rec.size();
    }
    ASSERT_TRUE(
        c.SendMessage(protocol::Type::kRefill, std::string(1, '\0'), 99).ok());
    for (int i = 0; i <= kCommits; i++) {
      protocol::Header h;
      std::string payload;
      ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
      const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
      if (i < kCommits) {
        ASSERT_EQ(h.type, protocol::Type::kCommitAck)
            << "round " << round << ": reply " << i
            << " is not a COMMIT_ACK: the REFILL overtook the commits";
        EXPECT_EQ(h.request_id, static_cast<uint32_t>(100 + i));
        protocol::CommitAck ack;
        ASSERT_TRUE(protocol::DecodeCommitAck(p, payload.size(), &ack).ok());
        EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
      } else {
        ASSERT_EQ(h.type, protocol::Type::kRefillAck);
        protocol::RefillAck ack;
        ASSERT_TRUE(
            protocol::DecodeRefillAck(p, payload.size(), a.segment_size, &ack)
                .ok());
        ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
        g = ack.grant;
      }
    }
  }
}

}  // namespace
}  // namespace kv::e2e
