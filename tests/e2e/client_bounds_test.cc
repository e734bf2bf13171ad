// The client library under kvserver's resource bounds: a grant-less
// accept (lazy grants) and busy REFILLs (rate limit, keyspace share) are
// handled transparently, retried with backoff within the op timeout.
#include "client_fixture.h"

namespace kv::e2e {
namespace {

// A refill rate of 2/s with no burst: 30 puts of 20 KiB into 64 KiB
// segments need ~10 grants, most of them answered busy first.
class ClientRefillLimitTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=64M", "--segment_size=64K",
            "--refill_rate=2", "--refill_burst=1"};
  }
};

TEST_F(ClientRefillLimitTest, BusyRefillsAreRetriedTransparently) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->stats().refills, 0u) << "the accept carries no grant";
  const std::string value(20 << 10, 'v');
  for (int i = 0; i < 30; i++) {
    Status st = c->Put("k" + std::to_string(i), value);
    ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
  }
  EXPECT_GE(c->stats().refills, 9u);
  for (int i = 0; i < 30; i++) {
    std::string got;
    ASSERT_TRUE(c->Get("k" + std::to_string(i), &got).ok()) << i;
    EXPECT_EQ(got, value);
  }
}

// A 16 MiB pool of 64 KiB segments and a 1% share: one grant at a time.
class ClientGrantShareTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=16M", "--segment_size=64K",
            "--grant_share_percent=1"};
  }
};

TEST_F(ClientGrantShareTest, BusyBeyondTheOpTimeoutIsReportedThenClears) {
  auto holder = Open();
  ASSERT_NE(holder, nullptr);
  ASSERT_TRUE(holder->Put("a", "1").ok());  // takes the keyspace's share
  ClientOptions o = Options();
  o.op_timeout = std::chrono::milliseconds(800);
  auto late = Open(o);
  ASSERT_NE(late, nullptr);
  std::string got;
  EXPECT_TRUE(late->Get("a", &got).ok()) << "readers need no grant";
  Status st = late->Put("b", "2");
  EXPECT_EQ(st.code(), StatusCode::kBusy) << st.ToString();
  EXPECT_NE(st.message().find("--grant_share_percent"), std::string::npos)
      << st.ToString();
  // The holder leaves (BYE returns its grant): the late writer gets one.
  holder.reset();
  st = late->Put("b", "2");
  EXPECT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace kv::e2e

namespace kv::e2e {
namespace {

class ClientIdleTimeoutTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    return {"--pool=" + dir_ + "/pool", "--pool_size=64M",
            "--idle_timeout_ms=500"};
  }
};

// The server ends an idle connection: the next operation fails with
// unavailable (it does not hang) and says why; a new connection works.
TEST_F(ClientIdleTimeoutTest, IdleConnectionIsClosedAndSaysWhy) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  ASSERT_TRUE(server_.WaitForLog("closed (idle timeout"));
  Status st = c->Put("k", "w");
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("--idle_timeout_ms"), std::string::npos)
      << st.ToString();
  auto again = Open();
  ASSERT_NE(again, nullptr);
  std::string got;
  ASSERT_TRUE(again->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
}

}  // namespace
}  // namespace kv::e2e
