// End-to-end crashes: kill -9 of kvserver in the middle of a put-heavy
// load (every acknowledged put/delete survives, nothing unacknowledged is
// half-visible), and kill -9 of a client process mid-put (the server keeps
// serving the others and seals the dead client's grant).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client_fixture.h"

extern char** environ;

namespace kv::e2e {
namespace {

class ClientCrashTest : public ClientTest {};

// What one writer thread knows about its own keys.
struct KeyLog {
  std::string acked;  // last acknowledged value ("" = deleted/none)
  bool acked_present = false;
  std::set<std::string> maybe;  // sent but never acknowledged
};

TEST_F(ClientCrashTest, Kill9OfTheServerLosesNothingAcknowledged) {
  constexpr int kWriters = 4, kKeysEach = 32;
  std::vector<std::map<std::string, KeyLog>> logs(kWriters);
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; w++) {
    threads.emplace_back([&, w] {
      ClientOptions o = Options();
      o.op_timeout = std::chrono::milliseconds(3000);
      auto c = Open(o);
      if (!c) return;
      for (int n = 0; !stop; n++) {
        const std::string key =
            "w" + std::to_string(w) + "/" + std::to_string(n % kKeysEach);
        KeyLog& log = logs[w][key];
        const bool del = n % 5 == 4;
        const std::string value =
            "v" + std::to_string(n) + std::string(n % 97, 'x');
        log.maybe.insert(del ? "" : value);
        Status st = del ? c->Delete(key) : c->Put(key, value);
        if (!st.ok()) return;  // the server is gone: this op's fate unknown
        log.maybe.clear();
        log.acked = del ? "" : value;
        log.acked_present = !del;
        acked++;
      }
    });
  }
  while (acked.load() < 2000)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server_.Kill9();
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(server_.Restart().ok()) << server_.StderrText();
  auto c = Open();
  int checked = 0;
  for (int w = 0; w < kWriters; w++) {
    for (const auto& [key, log] : logs[w]) {
      std::string got;
      Status st = c->Get(key, &got);
      ASSERT_TRUE(st.ok() || st.IsNotFound()) << key << ": " << st.ToString();
      const std::string seen = st.ok() ? got : "";
      const bool ok = (st.ok() == log.acked_present && seen == log.acked) ||
                      log.maybe.count(seen) > 0;
      EXPECT_TRUE(ok) << key << " reads '" << seen.substr(0, 20)
                      << "', acknowledged '" << log.acked.substr(0, 20) << "'";
      checked++;
    }
  }
  EXPECT_EQ(checked, kWriters * kKeysEach);
}

// The child half of the next test: puts in a loop until killed.
TEST(ClientCrashChild, DISABLED_PutLoop) {
  const char* server = std::getenv("RPKV_CHILD_SERVER");
  if (server == nullptr) GTEST_SKIP() << "run by ClientCrashTest only";
  ClientOptions o;
  o.server = server;
  auto c = Client::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::printf("child connected\n");
  std::fflush(stdout);
  for (int n = 0;; n++) {
    ASSERT_TRUE(
        (*c)->Put("child/" + std::to_string(n % 64), std::string(500, 'c'))
            .ok());
  }
}

TEST_F(ClientCrashTest, Kill9OfAClientMidPutLeavesOthersServed) {
  auto c = Open();
  ASSERT_TRUE(c->Put("mine", "before").ok());
  // A child process (this binary, running the disabled test above).
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  const std::string env = "RPKV_CHILD_SERVER=" + server_.address();
  std::vector<std::string> args = {
      self, "--gtest_also_run_disabled_tests",
      "--gtest_filter=ClientCrashChild.DISABLED_PutLoop"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; e++) envs.emplace_back(*e);
  envs.push_back(env);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, self, nullptr, nullptr, argv.data(), envp.data()),
            0);
  // Let it put for a while (its records land in its own grant).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  // The server notices, and keeps serving this client and new ones.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(c->Put("mine", "after").ok());
  auto d = Open();
  std::string got;
  ASSERT_TRUE(d->Get("mine", &got).ok());
  EXPECT_EQ(got, "after");
  // Some child put was acknowledged before the kill: readable intact.
  int child_keys = 0;
  for (int i = 0; i < 64; i++) {
    Status st = d->Get("child/" + std::to_string(i), &got);
    ASSERT_TRUE(st.ok() || st.IsNotFound()) << st.ToString();
    if (st.ok()) {
      child_keys++;
      EXPECT_EQ(got, std::string(500, 'c'));
    }
  }
  EXPECT_GT(child_keys, 0);
  // Clean shutdown and restart need no repair of anything the child left.
  EXPECT_EQ(server_.Stop(), 0);
  ASSERT_TRUE(server_.Restart().ok());
  auto e = Open();
  ASSERT_TRUE(e->Get("mine", &got).ok());
  EXPECT_EQ(got, "after");
}

}  // namespace
}  // namespace kv::e2e
