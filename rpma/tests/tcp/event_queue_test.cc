// EventQueue (rpma/src/tcp/event_queue.h): the contract both tcp channels
// rely on — fd readable exactly while an event is pending, FIFO order,
// non-blocking Get, Close waking a blocked waiter, RemoveIf/MoveIf keeping
// the counter in step, and uncounted events (PushUncounted) on the counter
// only from Count() on.
#include "tcp/event_queue.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace rpma::prov::tcp {
namespace {

using Queue = EventQueue<int>;

bool Readable(int fd, int ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

void SetNonBlocking(int fd) {
  ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

class EventQueueTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(Queue::Create(&q_), 0); }
  bool Push(int v) { return q_->Push(&v); }
  std::unique_ptr<Queue> q_;
};

TEST_F(EventQueueTest, FdIsReadableExactlyWhileAnEventIsPending) {
  EXPECT_FALSE(Readable(q_->fd()));
  ASSERT_TRUE(Push(1));
  ASSERT_TRUE(Push(2));
  EXPECT_TRUE(Readable(q_->fd()));
  int v = 0;
  ASSERT_EQ(q_->Get(&v), 0);
  EXPECT_TRUE(Readable(q_->fd()));  // one left
  ASSERT_EQ(q_->Get(&v), 0);
  EXPECT_FALSE(Readable(q_->fd()));
}

TEST_F(EventQueueTest, GetReturnsEventsInPushOrder) {
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(Push(i));
  for (int i = 0; i < 100; ++i) {
    int v = -1;
    ASSERT_EQ(q_->Get(&v), 0);
    EXPECT_EQ(v, i);
  }
}

TEST_F(EventQueueTest, NonBlockingGetOnAnEmptyQueueIsEagainAndWritesNothing) {
  SetNonBlocking(q_->fd());
  int v = 42;
  EXPECT_EQ(q_->Get(&v), -EAGAIN);
  EXPECT_EQ(v, 42);
  // O_NONBLOCK changes only the empty case.
  ASSERT_TRUE(Push(7));
  ASSERT_EQ(q_->Get(&v), 0);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(q_->Get(&v), -EAGAIN);
}

TEST_F(EventQueueTest, BlockedGetWakesOnPush) {
  auto got = std::async(std::launch::async, [this] {
    int v = -1;
    int rc = q_->Get(&v);
    return rc == 0 ? v : rc;
  });
  EXPECT_EQ(got.wait_for(std::chrono::milliseconds(100)),
            std::future_status::timeout);
  ASSERT_TRUE(Push(5));
  ASSERT_EQ(got.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(got.get(), 5);
  EXPECT_FALSE(Readable(q_->fd()));
}

TEST_F(EventQueueTest, TwoWaitersOneEventWakeOneAndKeepTheOtherWaiting) {
  std::atomic<int> done{0};
  auto waiter = [this, &done] {
    int v = -1;
    int rc = q_->Get(&v);
    done++;
    return rc;
  };
  auto a = std::async(std::launch::async, waiter);
  auto b = std::async(std::launch::async, waiter);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Push(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(done.load(), 1);
  ASSERT_TRUE(Push(2));
  ASSERT_EQ(a.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  ASSERT_EQ(b.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(a.get(), 0);
  EXPECT_EQ(b.get(), 0);
}

TEST_F(EventQueueTest, CloseWakesABlockedWaiterWithEpipe) {
  auto got = std::async(std::launch::async, [this] {
    int v = -1;
    return q_->Get(&v);
  });
  EXPECT_EQ(got.wait_for(std::chrono::milliseconds(100)),
            std::future_status::timeout);
  EXPECT_TRUE(q_->Close().empty());
  if (got.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    uint64_t one = 1;  // release the waiter so the test ends
    ASSERT_EQ(write(q_->fd(), &one, sizeof(one)), 8);
    FAIL() << "Close() did not wake the blocked Get()";
  }
  EXPECT_EQ(got.get(), -EPIPE);
}

TEST_F(EventQueueTest, CloseHandsBackQueuedEventsAndRefusesMore) {
  ASSERT_TRUE(Push(1));
  ASSERT_TRUE(Push(2));
  std::deque<int> left = q_->Close();
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0], 1);
  EXPECT_EQ(left[1], 2);
  int v = 3;
  EXPECT_FALSE(q_->Push(&v));
  EXPECT_EQ(v, 3);  // left with the caller
  EXPECT_EQ(q_->Get(&v), -EPIPE);
  EXPECT_TRUE(Readable(q_->fd()));   // a poller wakes up and sees the end
  EXPECT_TRUE(q_->Close().empty());  // idempotent
}

TEST_F(EventQueueTest, RemoveIfTakesMatchesAndKeepsTheCounterInStep) {
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Push(i));
  std::deque<int> odd = q_->RemoveIf([](int v) { return v % 2 == 1; });
  ASSERT_EQ(odd.size(), 3u);
  EXPECT_EQ(odd[0], 1);
  EXPECT_EQ(odd[2], 5);
  SetNonBlocking(q_->fd());
  for (int want : {0, 2, 4}) {
    int v = -1;
    ASSERT_EQ(q_->Get(&v), 0);
    EXPECT_EQ(v, want);
  }
  EXPECT_FALSE(Readable(q_->fd()));
  int v;
  EXPECT_EQ(q_->Get(&v), -EAGAIN);
}

TEST_F(EventQueueTest, MoveIfAppendsInOrderAndMovesTheCount) {
  std::unique_ptr<Queue> to;
  ASSERT_EQ(Queue::Create(&to), 0);
  int first = 100;
  ASSERT_TRUE(to->Push(&first));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Push(i));
  q_->MoveIf([](int v) { return v >= 2; }, to.get());
  SetNonBlocking(q_->fd());
  SetNonBlocking(to->fd());
  int v = -1;
  for (int want : {0, 1}) {
    ASSERT_EQ(q_->Get(&v), 0);
    EXPECT_EQ(v, want);
  }
  EXPECT_EQ(q_->Get(&v), -EAGAIN);
  EXPECT_FALSE(Readable(q_->fd()));
  for (int want : {100, 2, 3}) {
    ASSERT_EQ(to->Get(&v), 0);
    EXPECT_EQ(v, want);
  }
  EXPECT_FALSE(Readable(to->fd()));
  q_->MoveIf([](int) { return true; }, q_.get());  // to itself: no-op
}

TEST_F(EventQueueTest, MoveIfToAClosedQueueKeepsTheEvents) {
  std::unique_ptr<Queue> to;
  ASSERT_EQ(Queue::Create(&to), 0);
  (void)to->Close();
  ASSERT_TRUE(Push(9));
  q_->MoveIf([](int) { return true; }, to.get());
  int v = -1;
  ASSERT_EQ(q_->Get(&v), 0);
  EXPECT_EQ(v, 9);
}

TEST_F(EventQueueTest, MoveOnlyEventsAreMovedNotCopied) {
  std::unique_ptr<EventQueue<std::unique_ptr<std::string>>> q;
  ASSERT_EQ(EventQueue<std::unique_ptr<std::string>>::Create(&q), 0);
  auto ev = std::make_unique<std::string>("x");
  ASSERT_TRUE(q->Push(&ev));
  EXPECT_EQ(ev, nullptr);
  std::unique_ptr<std::string> out;
  ASSERT_EQ(q->Get(&out), 0);
  EXPECT_EQ(*out, "x");
}

// The eventfd's counter, read without taking from it (semaphore mode: a
// read takes one), by draining it non-blockingly and writing it back.
uint64_t Counter(int fd) {
  SetNonBlocking(fd);
  uint64_t n = 0, v = 0;
  while (read(fd, &v, sizeof(v)) == sizeof(v)) n++;
  if (n > 0) EXPECT_EQ(write(fd, &n, sizeof(n)), 8);
  return n;
}

TEST_F(EventQueueTest, UncountedEventsReachTheCounterOnlyWithCount) {
  int a = 1, b = 2;
  ASSERT_TRUE(q_->PushUncounted(&a));
  ASSERT_TRUE(q_->PushUncounted(&b));
  EXPECT_FALSE(Readable(q_->fd()));  // queued, not on the counter yet
  q_->Count();
  EXPECT_EQ(Counter(q_->fd()), 2u);
  q_->Count();  // nothing more to count
  EXPECT_EQ(Counter(q_->fd()), 2u);
  int v = -1;
  ASSERT_EQ(q_->TryGet(&v), 0);
  EXPECT_EQ(v, 1);
  ASSERT_EQ(q_->TryGet(&v), 0);
  EXPECT_EQ(v, 2);
  EXPECT_FALSE(Readable(q_->fd()));
}

TEST_F(EventQueueTest, TakingAnUncountedEventLeavesTheCounterAlone) {
  ASSERT_TRUE(Push(1));  // counted
  int two = 2;
  ASSERT_TRUE(q_->PushUncounted(&two));
  // FIFO holds across both kinds; whichever is taken, the counter stays
  // the number of counted events queued (the uncounted tally goes first).
  int v = -1;
  ASSERT_EQ(q_->TryGet(&v), 0);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(Counter(q_->fd()), 1u);
  q_->Count();  // nothing uncounted is left
  EXPECT_EQ(Counter(q_->fd()), 1u);
  ASSERT_EQ(q_->Get(&v), 0);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(Counter(q_->fd()), 0u);
  int w = -1;
  EXPECT_EQ(q_->TryGet(&w), -EAGAIN);
}

TEST_F(EventQueueTest, RemoveIfAndMoveIfKeepTheCounterInStepWithUncounted) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Push(i));  // counted: 0 1 2
  for (int i = 3; i < 6; ++i) ASSERT_TRUE(q_->PushUncounted(&i));
  // Six queued, three on the counter. Removing four leaves two, of which
  // at most the three uncounted may be off the counter: 0 counted.
  std::deque<int> gone = q_->RemoveIf([](int v) { return v < 4; });
  EXPECT_EQ(gone.size(), 4u);
  EXPECT_EQ(Counter(q_->fd()), 0u);
  q_->Count();
  EXPECT_EQ(Counter(q_->fd()), 2u);  // 4 and 5, now both counted
  std::unique_ptr<Queue> to;
  ASSERT_EQ(Queue::Create(&to), 0);
  int six = 6;
  ASSERT_TRUE(q_->PushUncounted(&six));
  q_->MoveIf([](int v) { return v == 4; }, to.get());
  EXPECT_EQ(Counter(to->fd()), 1u);
  EXPECT_EQ(Counter(q_->fd()), 1u);  // 5 counted, 6 not yet
  q_->Count();
  EXPECT_EQ(Counter(q_->fd()), 2u);
}

TEST_F(EventQueueTest, CloseForgetsTheUncountedTally) {
  int v = 1;
  ASSERT_TRUE(q_->PushUncounted(&v));
  EXPECT_EQ(q_->Close().size(), 1u);
  q_->Count();  // nothing: the fd is raised for good, not counted up
  EXPECT_TRUE(Readable(q_->fd()));
  EXPECT_FALSE(q_->PushUncounted(&v));
}

}  // namespace
}  // namespace rpma::prov::tcp
