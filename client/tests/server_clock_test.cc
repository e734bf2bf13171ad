// The client's estimate of the server's clock (src/server_clock.h), which
// judges expiries on the one-sided read path: its error bound, and — with
// a kvserver on 127.0.0.1 and the client's clock skewed or jumping through
// the test hook (client_clock_offset_ms_for_testing) — that expiries are
// judged by the server's clock, not the client's.
#include "server_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "client_fixture.h"
#include "kv/server_clock.h"

namespace kv::client_test {
namespace {

using std::chrono::milliseconds;

// Restores the client's clock after each test.
class ClockOffset {
 public:
  ClockOffset() { client_clock_offset_ms_for_testing = 0; }
  ~ClockOffset() { client_clock_offset_ms_for_testing = 0; }
  void Set(int64_t ms) { client_clock_offset_ms_for_testing = ms; }
  void Add(int64_t ms) { client_clock_offset_ms_for_testing += ms; }
};

TEST(ServerClockTest, TheEstimateIsTheMiddleOfThePingWithHalfItsRoundTrip) {
  ClockOffset offset;
  ServerClock c;
  EXPECT_TRUE(c.NeedsSync());
  const int64_t t = ServerClock::LocalMs();
  // A ping sent 10 ms ago, answered now, the server's clock read 5'000.
  c.AddSample(t - 10, t, 5'000);
  EXPECT_FALSE(c.NeedsSync());
  ServerClock::Estimate e = c.Now();
  EXPECT_GE(e.now_ms, 5'005u);
  EXPECT_LE(e.now_ms, 5'006u);  // a millisecond may pass meanwhile
  EXPECT_EQ(e.error_ms, 6u);    // 5 + the server's truncation (1)
  // Conservative: expired once the server's clock may have reached it.
  EXPECT_TRUE(c.Expired(e.now_ms + e.error_ms));
  EXPECT_FALSE(c.Expired(e.now_ms + e.error_ms + 100));
  EXPECT_GE(c.RemainingMs(e.now_ms + e.error_ms + 100), 98);
  EXPECT_EQ(c.RemainingMs(1), 0);
  // A worse sample does not replace a better one; a better one does.
  c.AddSample(t - 100, t, 9'999);
  EXPECT_LE(c.Now().now_ms, 5'010u);
  c.AddSample(t - 2, t, 7'000);
  EXPECT_GE(c.Now().now_ms, 7'001u);
  EXPECT_EQ(c.Now().error_ms, 2u);
}

TEST(ServerClockTest, TheErrorGrowsWithAgeAndAnOldOrJumpedSampleIsRenewed) {
  ClockOffset offset;
  ServerClock c;
  const int64_t t = ServerClock::LocalMs();
  c.AddSample(t, t, 1'000'000);
  EXPECT_EQ(c.Now().error_ms, 1u);
  offset.Add(ServerClock::kResyncMs);  // 10 s later: 500 ppm = 5 ms more
  EXPECT_GE(c.Now().error_ms, 6u);
  EXPECT_LE(c.Now().error_ms, 7u);
  EXPECT_GE(c.Now().now_ms, 1'010'000u);
  EXPECT_FALSE(c.NeedsSync());
  offset.Add(1);
  EXPECT_TRUE(c.NeedsSync());  // older than kResyncMs
  offset.Set(-5);              // the local clock ran backwards
  EXPECT_TRUE(c.NeedsSync());
  EXPECT_EQ(c.Now().now_ms, 1'000'000u);  // counts no time backwards
  // A fresh sample after the jump replaces the old one even if worse.
  const int64_t u = ServerClock::LocalMs();
  c.AddSample(u - 40, u, 2'000'000);
  EXPECT_FALSE(c.NeedsSync());
  EXPECT_GE(c.Now().now_ms, 2'000'020u);
}

class ServerClockE2eTest : public e2e::ClientTest {
 protected:
  ClockOffset offset_;
};

// A client whose clock is an hour off (either way) judges an expiry by the
// server's clock: the key reads back at first and reads absent after its
// time to live, as a client with a correct clock sees it.
TEST_F(ServerClockE2eTest, ASkewedClientClockDoesNotMoveExpiries) {
  for (int64_t skew : {int64_t{3'600'000}, int64_t{-3'600'000}}) {
    SCOPED_TRACE("skew " + std::to_string(skew));
    offset_.Set(skew);
    auto c = Open();
    ASSERT_NE(c, nullptr);
    const std::string key = "skewed" + std::to_string(skew);
    const auto put_at = std::chrono::steady_clock::now();
    kv::WriteOptions wo;
    wo.ttl = milliseconds(1500);
    ASSERT_TRUE(c->Put(key, "v", wo).ok());
    std::string got;
    KeyVersion v;
    ASSERT_TRUE(c->Get(key, &got, &v).ok());
    EXPECT_EQ(got, "v");
    EXPECT_GT(v.ttl_ms, 1000);  // one-sided read, right after the put
    EXPECT_LE(v.ttl_ms, 1500);
    // The server stamped its own clock: the expiry is about its now +
    // 1.5 s, whatever this client's clock says.
    const uint64_t server_now = UnixMillisNow();  // same host
    EXPECT_GE(v.expires_at_ms + 100, server_now + 1500);
    EXPECT_LE(v.expires_at_ms, server_now + 1500);
    // Absent once the time to live has passed, and not before most of it.
    Status st;
    while (std::chrono::steady_clock::now() - put_at < milliseconds(3000)) {
      st = c->Get(key, &got);
      if (st.IsNotFound()) break;
      ASSERT_TRUE(st.ok()) << st.ToString();
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_TRUE(st.IsNotFound()) << "still present 3 s after a 1.5 s ttl";
    const auto gone_after = std::chrono::steady_clock::now() - put_at;
    EXPECT_GE(gone_after, milliseconds(1400));
    EXPECT_EQ(c->Ttl(key).value(), Client::kTtlAbsent);
  }
}

// The client's clock jumps (an hour forward, then two back) after it has
// learnt the server's clock: the estimate notices (an age over 10 s, or
// negative) and pings again, so a key with a minute left still reads.
TEST_F(ServerClockE2eTest, AClockJumpAfterTheSyncIsCaughtByANewPing) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  kv::WriteOptions wo;
  wo.ttl = milliseconds(60'000);
  ASSERT_TRUE(c->Put("k", "v", wo).ok());
  auto ttl = c->Ttl("k");
  ASSERT_TRUE(ttl.ok());
  EXPECT_GT(*ttl, 55'000);
  const uint64_t infos = e2e::StatsValue(c.get(), "infos");
  offset_.Add(3'600'000);
  ttl = c->Ttl("k");
  ASSERT_TRUE(ttl.ok());
  EXPECT_GT(*ttl, 55'000) << "judged by the jumped clock";
  offset_.Add(-7'200'000);
  ttl = c->Ttl("k");
  ASSERT_TRUE(ttl.ok());
  EXPECT_GT(*ttl, 55'000);
  // Two pings (and the stats request itself).
  EXPECT_EQ(e2e::StatsValue(c.get(), "infos"), infos + 3);
}

// A client that never meets an expiry never pings: the clock costs
// nothing to those who do not use it.
TEST_F(ServerClockE2eTest, OnlyAReadThatMeetsAnExpiryLearnsTheClock) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("plain", "v").ok());
  const uint64_t infos = e2e::StatsValue(c.get(), "infos");
  std::string got;
  for (int i = 0; i < 5; i++) ASSERT_TRUE(c->Get("plain", &got).ok());
  EXPECT_TRUE(c->Get("absent", &got).IsNotFound());
  EXPECT_EQ(c->Ttl("plain").value(), Client::kTtlNoExpiry);
  EXPECT_EQ(e2e::StatsValue(c.get(), "infos"), infos + 1);
  kv::WriteOptions wo;
  wo.ttl = milliseconds(60'000);
  ASSERT_TRUE(c->Put("t", "v", wo).ok());
  for (int i = 0; i < 5; i++) ASSERT_TRUE(c->Get("t", &got).ok());
  // One ping for all five reads (the estimate is good for 10 s).
  EXPECT_EQ(e2e::StatsValue(c.get(), "infos"), infos + 3);
}

}  // namespace
}  // namespace kv::client_test
