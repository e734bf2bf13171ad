// The commit pipeline across sessions (server/README.md, "Threads and
// workers"): COMMITs of several connections that a worker reaps in one
// pass share one commit point, each acked with its own result, and all
// survive a kill -9.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class OneWorkerTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    auto f = ClientTest::ServerFlags();
    f.push_back("--workers=1");
    return f;
  }
};

TEST_F(OneWorkerTest, CommitsOfSeveralSessionsShareCommitPoints) {
  constexpr int kClients = 4, kRounds = 30, kBatch = 16;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; i++) clients.push_back(Open());
  std::vector<std::thread> threads;
  std::vector<int> failures(kClients, 0);
  for (int t = 0; t < kClients; t++) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; r++) {
        Batch b;
        for (int i = 0; i < kBatch; i++) {
          b.Put("s" + std::to_string(t) + "/" + std::to_string(i),
                "r" + std::to_string(r));
        }
        if (!clients[t]->Execute(&b).ok()) failures[t]++;
        for (size_t i = 0; i < b.size(); i++) {
          failures[t] += !b.result(i).status.ok();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kClients; t++) EXPECT_EQ(failures[t], 0) << t;
  const uint64_t commits = StatsValue(clients[0].get(), "commits");
  const uint64_t groups = StatsValue(clients[0].get(), "commit_groups");
  const uint64_t shared = StatsValue(clients[0].get(), "commit_groups_shared");
  EXPECT_EQ(commits, uint64_t{kClients} * kRounds * kBatch);
  EXPECT_LT(groups, commits);
  EXPECT_GT(shared, 0u) << "no commit point was shared by two sessions";
  clients.clear();
  server_.Kill9();
  ASSERT_TRUE(server_.Restart().ok()) << server_.StderrText();
  auto c = Open();
  for (int t = 0; t < kClients; t++) {
    for (int i = 0; i < kBatch; i++) {
      std::string v;
      const std::string key = "s" + std::to_string(t) + "/" + std::to_string(i);
      ASSERT_TRUE(c->Get(key, &v).ok()) << key;
      EXPECT_EQ(v, "r" + std::to_string(kRounds - 1)) << key;
    }
  }
}

}  // namespace
}  // namespace kv::e2e
