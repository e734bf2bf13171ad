// NotifyBatch (tcp_cq.h): completions pushed while a batch is open wake
// the application once, when the batch ends; without one, at once. And
// TcpCompletionChannel's own taking: TryGetEvent never blocks, and what a
// taker fires for itself (Consuming) is counted on the fd only if left.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <memory>

#include "tcp/tcp_cq.h"

namespace rpma::prov::tcp {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

class NotifyBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::unique_ptr<CompletionChannel> ch;
    ASSERT_EQ(TcpCompletionChannel::Create(&ch), 0);
    channel_.reset(static_cast<TcpCompletionChannel*>(ch.release()));
    int fl = fcntl(channel_->fd(), F_GETFL);
    ASSERT_EQ(fcntl(channel_->fd(), F_SETFL, fl | O_NONBLOCK), 0);
    cq_ = std::make_unique<TcpCq>(16, channel_.get());
  }
  void TearDown() override { cq_.reset(); }
  ibv_wc Wc(uint64_t id) {
    ibv_wc wc{};
    wc.wr_id = id;
    wc.status = IBV_WC_SUCCESS;
    return wc;
  }
  // Events queued on the channel (drains it).
  int Events() {
    int n = 0;
    Cq* got = nullptr;
    while (channel_->GetEvent(&got) == 0) {
      EXPECT_EQ(got, cq_.get());
      n++;
    }
    return n;
  }

  std::unique_ptr<TcpCompletionChannel> channel_;
  std::unique_ptr<TcpCq> cq_;
};

TEST_F(NotifyBatchTest, WithoutABatchTheFirstPushFires) {
  ASSERT_EQ(cq_->RequestNotify(), 0);
  cq_->Push(Wc(1));
  EXPECT_TRUE(Readable(channel_->fd()));
  cq_->Push(Wc(2));  // not re-armed: no second event
  EXPECT_EQ(Events(), 1);
}

TEST_F(NotifyBatchTest, ABatchFiresOnceWhenItEnds) {
  ASSERT_EQ(cq_->RequestNotify(), 0);
  {
    NotifyBatch batch;
    for (uint64_t i = 0; i < 5; i++) cq_->Push(Wc(i));
    EXPECT_FALSE(Readable(channel_->fd()));  // deferred
  }
  EXPECT_TRUE(Readable(channel_->fd()));
  EXPECT_EQ(Events(), 1);
  ibv_wc wcs[8];
  EXPECT_EQ(cq_->Poll(8, wcs), 5);  // every completion is there
}

TEST_F(NotifyBatchTest, AnUnarmedCqFiresNothingAfterTheBatch) {
  {
    NotifyBatch batch;
    cq_->Push(Wc(1));
  }
  EXPECT_EQ(Events(), 0);
  // Armed after the batch: the next push (no batch) fires.
  ASSERT_EQ(cq_->RequestNotify(), 0);
  cq_->Push(Wc(2));
  EXPECT_EQ(Events(), 1);
}

TEST_F(NotifyBatchTest, TryGetEventNeverBlocksOnABlockingFd) {
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(TcpCompletionChannel::Create(&ch), 0);
  int fl = fcntl(ch->fd(), F_GETFL);
  ASSERT_EQ(fl & O_NONBLOCK, 0);  // blocking: GetEvent would wait here
  Cq* got = nullptr;
  EXPECT_EQ(ch->TryGetEvent(&got), -EAGAIN);
  EXPECT_EQ(got, nullptr);
}

TEST_F(NotifyBatchTest, WhatATakerFiresForItselfAndLeavesWakesTheOthers) {
  auto second = std::make_unique<TcpCq>(16, channel_.get());
  ASSERT_EQ(cq_->RequestNotify(), 0);
  ASSERT_EQ(second->RequestNotify(), 0);
  {
    // As GetEvent's own socket progress: both CQs fire for this channel.
    TcpCompletionChannel::Consuming self(channel_.get());
    cq_->Push(Wc(1));
    second->Push(Wc(2));
    EXPECT_FALSE(Readable(channel_->fd()));  // not on the eventfd
  }
  Cq* got = nullptr;
  ASSERT_EQ(channel_->TryGetEvent(&got), 0);
  EXPECT_EQ(got, cq_.get());
  // The one it left is on the fd: another waiter would wake for it.
  EXPECT_TRUE(Readable(channel_->fd()));
  ASSERT_EQ(channel_->TryGetEvent(&got), 0);
  EXPECT_EQ(got, second.get());
  EXPECT_FALSE(Readable(channel_->fd()));
  EXPECT_EQ(channel_->TryGetEvent(&got), -EAGAIN);
  second.reset();
}

TEST_F(NotifyBatchTest, AnotherChannelsEventsStayCountedWhileConsuming) {
  std::unique_ptr<CompletionChannel> other_ch;
  ASSERT_EQ(TcpCompletionChannel::Create(&other_ch), 0);
  auto* other = static_cast<TcpCompletionChannel*>(other_ch.get());
  auto ocq = std::make_unique<TcpCq>(16, other);
  ASSERT_EQ(ocq->RequestNotify(), 0);
  {
    TcpCompletionChannel::Consuming self(channel_.get());
    ocq->Push(Wc(1));
  }
  EXPECT_TRUE(Readable(other->fd()));  // counted at once: not its taker
  Cq* got = nullptr;
  ASSERT_EQ(other->TryGetEvent(&got), 0);
  EXPECT_EQ(got, ocq.get());
  ocq.reset();
}

}  // namespace
}  // namespace rpma::prov::tcp
