// End-to-end concurrency: 8 clients, each its own connection, on the same
// 16 keys; every value self-checking; the recorded history must be
// linearizable per key. Also the checker itself, on histories it must
// accept and reject, and the cleaner running under load.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include "client_fixture.h"
#include "kv/crc32c.h"
#include "linearizability.h"

namespace kv::e2e {
namespace {

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "<writer>-<n>:<pad>:<crc>" — unique per put, and any torn or mixed value
// fails the CRC.
std::string MakeValue(int writer, int n, size_t pad) {
  std::string body = std::to_string(writer) + "-" + std::to_string(n) + ":" +
                     std::string(pad, static_cast<char>('a' + (n % 26)));
  const uint32_t crc = Crc32c(body.data(), body.size());
  return body + ":" + std::to_string(crc);
}

bool ValueIntact(const std::string& v) {
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos) return false;
  const std::string body = v.substr(0, colon);
  return std::to_string(Crc32c(body.data(), body.size())) ==
         v.substr(colon + 1);
}

TEST(LinearizabilityCheckerTest, AcceptsSequentialAndConcurrentHistories) {
  using O = HistoryOp;
  // put a [0,10], get a [20,30], concurrent put b [25,40] + get b [35,45].
  std::vector<O> h = {
      {O::kPut, "k", "a", false, 0, 10},    {O::kGet, "k", "a", true, 20, 30},
      {O::kPut, "k", "b", false, 25, 40},   {O::kGet, "k", "b", true, 35, 45},
      {O::kDelete, "k", "", false, 50, 60}, {O::kGet, "k", "", false, 70, 80}};
  EXPECT_TRUE(NonLinearizableKeys(h).empty());
  // A get overlapping a put may see either value.
  h.push_back({O::kPut, "k", "c", false, 90, 120});
  h.push_back({O::kGet, "k", "", false, 95, 100});
  EXPECT_TRUE(NonLinearizableKeys(h).empty());
}

TEST(LinearizabilityCheckerTest, RejectsStaleAndPhantomReads) {
  using O = HistoryOp;
  // A read after the put returned must see it (or something newer).
  std::vector<O> stale = {{O::kPut, "k", "a", false, 0, 10},
                          {O::kPut, "k", "b", false, 20, 30},
                          {O::kGet, "k", "a", true, 40, 50}};
  EXPECT_EQ(NonLinearizableKeys(stale), std::vector<std::string>{"k"});
  // A value nobody wrote, and an absent read after a completed put.
  std::vector<O> phantom = {{O::kGet, "k", "zz", true, 0, 10}};
  EXPECT_FALSE(NonLinearizableKeys(phantom).empty());
  std::vector<O> lost = {{O::kPut, "k", "a", false, 0, 10},
                         {O::kGet, "k", "", false, 20, 30}};
  EXPECT_FALSE(NonLinearizableKeys(lost).empty());
  // Reads that go back in time across concurrent puts.
  std::vector<O> flip = {{O::kPut, "k", "a", false, 0, 100},
                         {O::kPut, "k", "b", false, 0, 100},
                         {O::kGet, "k", "a", true, 10, 20},
                         {O::kGet, "k", "b", true, 30, 40},
                         {O::kGet, "k", "a", true, 50, 60}};
  EXPECT_FALSE(NonLinearizableKeys(flip).empty());
}

class ClientConcurrencyTest : public ClientTest {};

TEST_F(ClientConcurrencyTest, EightClientsOnSixteenKeysAreLinearizable) {
  constexpr int kClients = 8, kKeys = 16, kOpsPerClient = 300;
  std::mutex mu;
  std::vector<HistoryOp> history;
  std::atomic<int> torn{0}, errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kClients; w++) {
    threads.emplace_back([&, w] {
      auto c = Open();
      if (!c) {
        errors++;
        return;
      }
      std::mt19937 rng(w);
      std::vector<HistoryOp> mine;
      for (int n = 0; n < kOpsPerClient; n++) {
        HistoryOp o;
        o.key = "key" + std::to_string(rng() % kKeys);
        const int dice = static_cast<int>(rng() % 10);
        o.call = Now();
        Status st;
        if (dice < 4) {
          o.kind = HistoryOp::kPut;
          o.value = MakeValue(w, n, rng() % 300);
          st = c->Put(o.key, o.value);
        } else if (dice < 5) {
          o.kind = HistoryOp::kDelete;
          st = c->Delete(o.key);
        } else {
          o.kind = HistoryOp::kGet;
          st = c->Get(o.key, &o.value);
          o.found = st.ok();
          if (st.IsNotFound()) st = Status::Ok();
          if (o.found && !ValueIntact(o.value)) torn++;
        }
        o.ret = Now();
        if (!st.ok()) {
          errors++;
          ADD_FAILURE() << st.ToString();
          continue;
        }
        mine.push_back(std::move(o));
      }
      std::lock_guard<std::mutex> lock(mu);
      history.insert(history.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  ASSERT_EQ(history.size(), size_t{kClients * kOpsPerClient});
  EXPECT_EQ(NonLinearizableKeys(history), std::vector<std::string>{});
}

TEST_F(ClientConcurrencyTest, ReadsStayCorrectWhileTheCleanerRuns) {
  // Overwrites make dead space; the server's cleaner (threshold from the
  // fixture's default) compacts while readers verify every value.
  auto w = Open();
  std::map<std::string, std::string> latest;
  for (int i = 0; i < 200; i++) {
    latest["c" + std::to_string(i)] = MakeValue(0, i, 200);
    ASSERT_TRUE(
        w->Put("c" + std::to_string(i), latest["c" + std::to_string(i)]).ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, reads{0};
  std::mutex mu;
  std::thread reader([&] {
    auto r = Open();
    std::mt19937 rng(7);
    while (!stop) {
      const std::string k = "c" + std::to_string(rng() % 200);
      std::string v;
      Status st = r->Get(k, &v);
      if (!st.ok() || !ValueIntact(v)) {
        bad++;
        ADD_FAILURE() << k << ": " << st.ToString();
      }
      reads++;
    }
  });
  // Every round overwrites 180 keys and adds 20 new ones that stay: each
  // segment keeps some live records, so the dead space is not simply
  // freed with whole dead segments but must be compacted.
  for (int round = 1; round <= 15; round++) {
    for (int i = 0; i < 200; i++) {
      const std::string k =
          i < 180 ? "c" + std::to_string(i)
                  : "cold" + std::to_string(round) + "-" + std::to_string(i);
      const std::string v = MakeValue(round, i, 200);
      ASSERT_TRUE(w->Put(k, v).ok());
      std::lock_guard<std::mutex> lock(mu);
      latest[k] = v;
    }
  }
  // 15 rounds x 200 x ~300 B over 64 KiB segments, ~85 % of it dead
  // (cleaner threshold 0.5): the cleaner runs (on
  // its own schedule: a loaded machine may finish the writes first, so
  // the reader keeps reading until it has run, or 30 s).
  Result<std::string> stats = Status::Unavailable("no stats yet");
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    stats = w->Info(Client::InfoTopic::kStats);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats->find("cleaner_runs 0\n") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(stats->find("cleaner_runs 0\n"), std::string::npos) << *stats;
  auto c = Open();
  for (const auto& [k, v] : latest) {
    std::string got;
    ASSERT_TRUE(c->Get(k, &got).ok()) << k;
    EXPECT_EQ(got, v) << k;
  }
}

}  // namespace
}  // namespace kv::e2e
