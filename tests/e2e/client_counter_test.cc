// Client::IncrBy and Client::Append (issue 22): read, conditional write,
// retry. Eight clients on one key end at the exact sum; a call that gives
// up after max_conflicts changed nothing; values that are not integers,
// overflow and the value limit are refused with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class CounterTest : public ClientTest {};

constexpr int kClients = 8;

TEST_F(CounterTest, EightClientsIncrementingOneKeyEndAtTheExactSum) {
  constexpr int kEach = 150;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; i++) {
    clients.push_back(Open());
    ASSERT_NE(clients.back(), nullptr);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; i++) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < kEach; n++) {
        auto v = clients[i]->IncrBy("counter", i % 2 == 0 ? 1 : 3);
        if (!v.ok()) {
          failures++;
          ADD_FAILURE() << v.status().ToString();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  std::string v;
  ASSERT_TRUE(clients[0]->Get("counter", &v).ok());
  // Four clients add 1, four add 3, kEach times each.
  EXPECT_EQ(v, std::to_string(4 * kEach * 1 + 4 * kEach * 3));
}

TEST_F(CounterTest, EightClientsAppendingLoseNoSuffix) {
  constexpr int kEach = 40;
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; i++) {
    threads.emplace_back([&, i] {
      auto c = Open();
      ASSERT_NE(c, nullptr);
      const std::string mine(1, static_cast<char>('a' + i));
      for (int n = 0; n < kEach; n++) {
        auto len = c->Append("log", mine);
        ASSERT_TRUE(len.ok()) << len.status().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  auto c = Open();
  std::string v;
  ASSERT_TRUE(c->Get("log", &v).ok());
  ASSERT_EQ(v.size(), static_cast<size_t>(kClients * kEach));
  for (int i = 0; i < kClients; i++) {
    EXPECT_EQ(std::count(v.begin(), v.end(), 'a' + i), kEach) << i;
  }
}

// max_conflicts 1: under contention some calls give up with busy; each
// of those changed nothing, so the value is exactly the sum of the calls
// that succeeded.
TEST_F(CounterTest, ACallThatGivesUpChangedNothing) {
  std::atomic<int> ok{0}, busy{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; i++) {
    threads.emplace_back([&] {
      ClientOptions o = Options();
      o.max_conflicts = 1;
      auto c = Open(o);
      ASSERT_NE(c, nullptr);
      for (int n = 0; n < 60; n++) {
        auto v = c->Incr("hot");
        if (v.ok()) {
          ok++;
        } else {
          ASSERT_EQ(v.status().code(), StatusCode::kBusy)
              << v.status().ToString();
          EXPECT_NE(v.status().message().find("conflicting writes in a row"),
                    std::string::npos);
          busy++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  auto c = Open();
  std::string v;
  ASSERT_TRUE(c->Get("hot", &v).ok());
  EXPECT_EQ(v, std::to_string(ok.load())) << busy.load() << " gave up";
}

TEST_F(CounterTest, NonIntegersOverflowAndTheValueLimitWriteNothing) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  auto v = c->Incr("fresh");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 1);
  v = c->IncrBy("fresh", -11);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, -10);
  for (const char* bad :
       {"abc", "1.5", " 1", "+1", "01", "", "-", "99999999999999999999"}) {
    ASSERT_TRUE(c->Put("bad", bad).ok());
    v = c->Incr("bad");
    EXPECT_TRUE(v.status().IsInvalidArgument()) << bad;
    std::string now;
    ASSERT_TRUE(c->Get("bad", &now).ok());
    EXPECT_EQ(now, bad);
  }
  ASSERT_TRUE(
      c->Put("max", std::to_string(std::numeric_limits<int64_t>::max())).ok());
  v = c->Incr("max");
  EXPECT_TRUE(v.status().IsInvalidArgument());
  EXPECT_NE(v.status().message().find("overflow"), std::string::npos);
  ASSERT_TRUE(
      c->Put("min", std::to_string(std::numeric_limits<int64_t>::min())).ok());
  v = c->IncrBy("min", -1);
  EXPECT_TRUE(v.status().IsInvalidArgument());
  v = c->IncrBy("min", 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::numeric_limits<int64_t>::min() + 1);

  auto n = c->Append("s", "ab");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
  n = c->Append("s", std::string("\0c", 2));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 4u);
  std::string s;
  ASSERT_TRUE(c->Get("s", &s).ok());
  EXPECT_EQ(s, std::string("ab\0c", 4));
  n = c->Append("s", std::string(c->max_value_size(), 'x'));
  EXPECT_TRUE(n.status().IsInvalidArgument());
  ASSERT_TRUE(c->Get("s", &s).ok());
  EXPECT_EQ(s.size(), 4u);
}

}  // namespace
}  // namespace kv::e2e
