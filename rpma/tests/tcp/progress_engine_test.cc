// ProgressEngine's deferred callbacks (progress_engine.h): a cancelled
// deferral is never called back, and a deferral is called back once, no
// earlier than its own kDeferUs (less kDeferSlackUs) — also when the timer
// was armed for an earlier deferral that was cancelled (a cancel leaves
// the timer armed). And its ticks: none while only tickless handlers
// (listeners) are registered.
#include "tcp/progress_engine.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rpma::prov::tcp {
namespace {

using Clock = std::chrono::steady_clock;

// Records when OnDeferred ran, and counts ticks.
class Recorder : public Handler {
 public:
  void OnEvent(uint32_t) override {}
  void OnTick(int64_t) override { ticks_++; }
  int ticks() const { return ticks_.load(); }
  void OnDeferred() override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(Clock::now());
  }
  std::vector<Clock::time_point> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<Clock::time_point> calls_;
  std::atomic<int> ticks_{0};
};

class ProgressEngineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ProgressEngine::Create(&engine_), 0); }
  void TearDown() override {
    for (auto& [fd, id] : regs_) engine_->Remove(fd, id);
    engine_.reset();
    for (auto& [fd, id] : regs_) close(fd);
  }
  // A handler registered on an eventfd that never becomes ready.
  uint64_t Register(std::shared_ptr<Recorder> h, bool ticks = true) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    EXPECT_GE(fd, 0);
    uint64_t id = 0;
    EXPECT_EQ(engine_->Add(fd, EPOLLIN, h, &id, ticks), 0);
    regs_.emplace_back(fd, id);
    return id;
  }
  void Unregister(uint64_t id) {
    for (auto it = regs_.begin(); it != regs_.end(); ++it) {
      if (it->second != id) continue;
      engine_->Remove(it->first, id);
      close(it->first);
      regs_.erase(it);
      return;
    }
  }
  // Waits up to 2 s for h's ticks to pass n.
  static bool TicksPass(const Recorder& h, int n) {
    const auto end = Clock::now() + std::chrono::seconds(2);
    while (h.ticks() <= n && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return h.ticks() > n;
  }
  // h's ticks over `ms` once any tick in progress is over.
  static int TicksOver(const Recorder& h, int ms) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(ProgressEngine::kTickMs));
    const int before = h.ticks();
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return h.ticks() - before;
  }

  static constexpr auto kDefer = std::chrono::microseconds(
      ProgressEngine::kDeferUs - ProgressEngine::kDeferSlackUs);
  std::unique_ptr<ProgressEngine> engine_;
  std::vector<std::pair<int, uint64_t>> regs_;
};

TEST_F(ProgressEngineTest, ACancelledDeferralIsNeverCalledBack) {
  auto h = std::make_shared<Recorder>();
  uint64_t id = Register(h);
  engine_->DeferFlush(id);
  engine_->CancelDeferred(id);
  // The timer is still armed and fires; nothing is due.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(h->calls().empty());
}

TEST_F(ProgressEngineTest, ADeferralIsCalledBackOnceAfterItsOwnDelay) {
  auto a = std::make_shared<Recorder>();
  auto b = std::make_shared<Recorder>();
  uint64_t ida = Register(a), idb = Register(b);
  // a arms the timer and is cancelled: the timer stays armed for a's
  // deadline, which is earlier than b's.
  engine_->DeferFlush(ida);
  engine_->CancelDeferred(ida);
  std::this_thread::sleep_for(std::chrono::microseconds(300));
  const auto deferred = Clock::now();
  engine_->DeferFlush(idb);
  engine_->DeferFlush(idb);  // idempotent
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (b->calls().empty() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::vector<Clock::time_point> calls = b->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_GE(calls[0] - deferred, kDefer)
      << "called back at a cancelled deferral's earlier expiry";
  EXPECT_TRUE(a->calls().empty());
}

TEST_F(ProgressEngineTest, StaggeredDeferralsAreEachCalledBackInTime) {
  constexpr int kHandlers = 8;
  std::vector<std::shared_ptr<Recorder>> hs;
  std::vector<uint64_t> ids;
  std::vector<Clock::time_point> when;
  for (int i = 0; i < kHandlers; i++) {
    hs.push_back(std::make_shared<Recorder>());
    ids.push_back(Register(hs.back()));
  }
  for (int i = 0; i < kHandlers; i++) {
    when.push_back(Clock::now());
    engine_->DeferFlush(ids[i]);
    if (i % 2 == 1) engine_->CancelDeferred(ids[i]);  // odd ones cancelled
    std::this_thread::sleep_for(std::chrono::microseconds(120));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < kHandlers; i++) {
    std::vector<Clock::time_point> calls = hs[i]->calls();
    if (i % 2 == 1) {
      EXPECT_TRUE(calls.empty()) << i;
      continue;
    }
    ASSERT_EQ(calls.size(), 1u) << i;
    EXPECT_GE(calls[0] - when[i], kDefer) << i;
  }
}

// Idle cost: with only tickless handlers (listeners) the engine sleeps
// with no timeout; a handler that needs ticks starts them at once (even
// if its fd never becomes ready: a connection's deadlines), and they stop
// again when it goes. Four ticks would fit in each 200 ms window.
TEST_F(ProgressEngineTest,
       AnEngineWithOnlyAListenerSleepsAndAConnectionStartsItsTicks) {
  auto listener = std::make_shared<Recorder>();
  Register(listener, /*ticks=*/false);
  EXPECT_EQ(TicksOver(*listener, 200), 0);
  auto conn = std::make_shared<Recorder>();
  const uint64_t id = Register(conn);
  ASSERT_TRUE(TicksPass(*conn, 1));
  EXPECT_TRUE(TicksPass(*listener, 1));  // every handler ticks meanwhile
  Unregister(id);
  EXPECT_EQ(TicksOver(*listener, 200), 0);
}

TEST_F(ProgressEngineTest, ATicklessHandlerHoldingTicksGetsThemUntilItLets) {
  auto listener = std::make_shared<Recorder>();
  Register(listener, /*ticks=*/false);
  engine_->HoldTicks(1);  // a paused accept retries on the tick
  ASSERT_TRUE(TicksPass(*listener, 1));
  engine_->HoldTicks(-1);
  EXPECT_EQ(TicksOver(*listener, 200), 0);
}

}  // namespace
}  // namespace rpma::prov::tcp
