// The access-error penalty's arithmetic (access_penalty.h) on synthetic
// time: doubling to the cap, one delivery per penalty, the hold limit,
// forgiveness after the quiet period, addresses independent, bounded
// table.
#include <gtest/gtest.h>

#include <string>

#include "tcp/access_penalty.h"

namespace rpma::prov::tcp {
namespace {

using P = PenaltyPolicy;

class PenaltyTest : public ::testing::Test {
 protected:
  void SetUp() override { pen_.Clear(); }
  void TearDown() override { pen_.Clear(); }
  AccessPenalty& pen_ = AccessPenalty::Global();
  const std::string ip_ = "192.0.2.7";
  int64_t t_ = 1'000'000;
};

TEST_F(PenaltyTest, NoErrorsNoDelay) {
  EXPECT_EQ(pen_.PenaltyMs(ip_, t_), 0);
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_), t_);
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_), t_);  // and nothing queues up
  EXPECT_EQ(pen_.errors(ip_), 0u);
}

TEST_F(PenaltyTest, DoublesPerErrorUpToTheCap) {
  int64_t want = P::kBaseMs;
  for (int i = 1; i <= 10; ++i) {
    pen_.RecordError(ip_, t_);
    EXPECT_EQ(pen_.errors(ip_), static_cast<uint32_t>(i));
    EXPECT_EQ(pen_.PenaltyMs(ip_, t_), want) << i << " errors";
    want = std::min(want * 2, P::kCapMs);
  }
  EXPECT_EQ(pen_.PenaltyMs(ip_, t_), P::kCapMs);
}

TEST_F(PenaltyTest, RequestsOfOneAddressAreDeliveredOnePenaltyApart) {
  pen_.RecordError(ip_, t_);
  pen_.RecordError(ip_, t_);  // 2 * kBaseMs
  const int64_t p = 2 * P::kBaseMs;
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_), t_ + p);
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_), t_ + 2 * p);
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_ + 10), t_ + 3 * p);
  // Another address is not held up by it.
  EXPECT_EQ(pen_.DeliveryTime("192.0.2.8", t_), t_);
}

TEST_F(PenaltyTest, TooLongAWaitIsRefused) {
  for (int i = 0; i < 10; ++i) pen_.RecordError(ip_, t_);  // at the cap
  int accepted = 0;
  while (pen_.DeliveryTime(ip_, t_) >= 0) ++accepted;
  EXPECT_EQ(accepted, P::kMaxHoldMs / P::kCapMs);
  // Once the queue drained, the address gets its turns again.
  EXPECT_GE(pen_.DeliveryTime(ip_, t_ + P::kMaxHoldMs), 0);
}

TEST_F(PenaltyTest, ForgivenAfterTheQuietPeriod) {
  pen_.RecordError(ip_, t_);
  pen_.RecordError(ip_, t_ + 10);
  EXPECT_GT(pen_.PenaltyMs(ip_, t_ + P::kQuietMs), 0);  // 10 ms short
  EXPECT_EQ(pen_.PenaltyMs(ip_, t_ + 10 + P::kQuietMs), 0);
  EXPECT_EQ(pen_.DeliveryTime(ip_, t_ + 10 + P::kQuietMs),
            t_ + 10 + P::kQuietMs);
  // A new error starts from the base again.
  pen_.RecordError(ip_, t_ + 20 + P::kQuietMs);
  EXPECT_EQ(pen_.PenaltyMs(ip_, t_ + 20 + P::kQuietMs), P::kBaseMs);
}

TEST_F(PenaltyTest, TheTableIsBounded) {
  for (size_t i = 0; i < P::kMaxAddresses + 10; ++i) {
    pen_.RecordError(
        "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256),
        t_ + static_cast<int64_t>(i));
  }
  // The oldest made room; the newest are all there.
  EXPECT_EQ(pen_.errors("10.0.0.0"), 0u);
  size_t last = P::kMaxAddresses + 9;
  EXPECT_EQ(pen_.errors("10.0." + std::to_string(last / 256) + "." +
                        std::to_string(last % 256)),
            1u);
}

}  // namespace
}  // namespace rpma::prov::tcp
