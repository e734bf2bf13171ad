// The REFILL rate limit charges only REFILLs that replace a grant left
// mostly unused: a writer whose commits filled at least half of its grant
// refills freely (a large-value writer would otherwise be capped at a few
// puts per second), while collecting segments stays rate-limited.
#include <chrono>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class ServerRefillTest : public ServerTest {
 protected:
  // Commits records of `value_size` bytes into *g from *tail until at
  // least half of the grant is used.
  void FillHalf(RawClient* c, const protocol::Accept& a, protocol::Grant* g,
                uint32_t* id) {
    const std::string value(10000, 'v');
    const uint64_t size = record_format::RecordSize(6, value.size());
    uint64_t tail = g->start;
    while (tail - g->start < (g->size - g->start) / 2) {
      protocol::CommitAck ack;
      const std::string key = "k" + std::to_string((*id)++);
      ASSERT_TRUE(PutRaw(c, a, *g, tail, key, value, &ack, false, *id).ok());
      ASSERT_EQ(ack.status, StatusCode::kOk) << ack.message;
      tail += size;
    }
  }
};

TEST_F(ServerRefillTest, RefillsOfUsedGrantsAreFreeOthersAreLimited) {
  StartServer({"--segment_size=64K", "--refill_rate=1", "--refill_burst=1"});
  const auto t0 = Clock::now();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);  // takes the one token of the burst
  ASSERT_NE(a.grant.size, 0u);
  protocol::Grant g = a.grant;
  uint32_t id = 100;
  for (int round = 0; round < 3; round++) {
    FillHalf(&c, a, &g, &id);
    protocol::RefillAck ack;
    ASSERT_TRUE(Refill(&c, a, &ack).ok());
    ASSERT_EQ(ack.status, StatusCode::kOk)
        << "round " << round << ": " << ack.message;
    EXPECT_NE(ack.grant.grant_id, g.grant_id);
    g = ack.grant;
  }
  // Nothing committed into the fresh grant: this one takes a token, and
  // there is none.
  protocol::RefillAck ack;
  ASSERT_TRUE(Refill(&c, a, &ack).ok());
  if (Clock::now() - t0 > std::chrono::milliseconds(2500)) {
    GTEST_SKIP() << "too slow to tell: the bucket refilled meanwhile";
  }
  EXPECT_EQ(ack.status, StatusCode::kBusy) << ack.message;
  EXPECT_NE(ack.message.find("--refill_rate"), std::string::npos)
      << ack.message;
  EXPECT_EQ(ack.grant.grant_id, g.grant_id) << "the old grant stays";
}

}  // namespace
}  // namespace kv::e2e
