// Worker threads (server/README.md, "Threads and workers"): many
// connections are driven by a fixed set of threads, a client that takes
// no replies cannot stall the other sessions of its worker, and every
// connection of a crowd is answered.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using std::chrono::milliseconds;

long ServerThreads(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stol(line.substr(8));
  }
  return -1;
}

// How often the thread named `name` of `pid` went to sleep (blocked) so
// far: its voluntary context switches. -1 when there is no such thread.
long VoluntarySwitches(pid_t pid, const std::string& name) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(task, ec)) {
    std::ifstream comm(dir.path() / "comm");
    std::string got;
    if (!std::getline(comm, got) || got != name) continue;
    std::ifstream status(dir.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
        return std::stol(line.substr(24));
      }
    }
  }
  return -1;
}

class ServerWorkersTest : public ServerTest {};

// Thread per connection would make this 200 + threads; workers keep it at
// workers + the acceptor, the cleaner, the provider's engines and the
// sanitizer's own.
TEST_F(ServerWorkersTest, TwoHundredConnectionsAreServedByTheWorkers) {
  StartServer({"--workers=2"});
  const long idle_threads = ServerThreads(server_.pid());
  ASSERT_GT(idle_threads, 0);
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 200; i++) {
    clients.push_back(std::make_unique<RawClient>());
    protocol::Accept a;
    ConnectOk(clients.back().get(), "default", &a, 0, /*take_grant=*/false);
    if (HasFatalFailure()) return;
  }
  // Every one is answered (a session not watched by any worker would
  // time out here).
  for (auto& c : clients) {
    const std::string text = Info(c.get(), protocol::InfoTopic::kStats);
    EXPECT_GE(StatValue(text, "connections_active"), 200);
  }
  const long busy_threads = ServerThreads(server_.pid());
  EXPECT_LE(busy_threads, idle_threads + 2)
      << "threads grew with the connections";
}

// --spin_us: a worker keeps polling while its client only reads (one-sided
// READs it serves count as work), and a stop still ends it at once — the
// spin gives way to the worker's wake-up (stop, new sessions).
TEST_F(ServerWorkersTest, ASpinningWorkerServesReadsAndStillStopsAtOnce) {
  StartServer({"--workers=1", "--spin_us=500000"});
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  if (HasFatalFailure()) return;
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, a.grant, a.grant.start, "k", "v", &ack).ok());
  ASSERT_EQ(ack.status, StatusCode::kOk);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    std::string out;
    while (!done.load() && c.Read(a.read_desc, 0, 64, &out).ok()) reads++;
  });
  // Reads only, for a while: the spin is kept going by the READs the
  // worker serves, which yield no completion on the server — so the
  // worker does not sleep between them (it would once per READ if only
  // completions started a spin).
  std::this_thread::sleep_for(milliseconds(100));
  const long slept0 = VoluntarySwitches(server_.pid(), "kvworker-0");
  const int reads0 = reads.load();
  std::this_thread::sleep_for(milliseconds(700));
  const long slept = VoluntarySwitches(server_.pid(), "kvworker-0") - slept0;
  const int served = reads.load() - reads0;
  ASSERT_GE(slept0, 0) << "no thread kvworker-0 in the server";
  EXPECT_GE(served, 100);
  EXPECT_LT(slept * 10, served)
      << "the worker slept " << slept << " times for " << served
      << " READs: the spin did not count them";
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = server_.Stop(std::chrono::seconds(8));
  const auto took = std::chrono::steady_clock::now() - t0;
  done.store(true);
  reader.join();
  EXPECT_EQ(rc, 0) << "the spinning worker did not stop";
  EXPECT_LT(took, std::chrono::seconds(5));
}

// A client that sends requests and never takes its replies: the provider
// holds a little for it, then its replies cannot complete; they wait in
// the session's outbox (or the provider fails them once its RNR retries
// run out) while its worker — the only one here — goes on serving
// others. The hog is closed in bounded time.
TEST_F(ServerWorkersTest, AClientThatTakesNoRepliesDoesNotStallItsWorker) {
  StartServer({"--workers=1", "--max_inflight=4"});
  RawClient hog;
  protocol::Accept ha;
  ConnectOk(&hog, "default", &ha, 0, /*take_grant=*/false);
  // Its receives are used up and never posted again: the server's replies
  // cannot complete. Its sends stop once the server stops taking its
  // messages (the session's receives are not reposted either).
  hog.StopTakingReplies();
  std::string stats(1, static_cast<char>(protocol::InfoTopic::kStats));
  int sent = 0;
  for (; sent < 200; sent++) {
    if (!hog.SendMessage(protocol::Type::kInfo, stats, 100 + sent).ok()) break;
  }
  EXPECT_GT(sent, 4) << "the hog could not even fill its replies";
  // Others on the same worker are served meanwhile.
  Putter p;
  RawClient other;
  p.c = &other;
  ConnectOk(&other, "default", &p.a);
  if (HasFatalFailure()) return;
  p.g = p.a.grant;
  p.tail = p.g.start;
  for (int i = 0; i < 20; i++) {
    Status st = p.Put("w" + std::to_string(i), "value", 1000 + i);
    ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
  }
  (void)Info(&other, protocol::InfoTopic::kPing);  // fails unless answered
  // The hog (session 1) is closed: after the 5 s reply timeout, or when
  // its replies fail.
  bool closed = false;
  for (int i = 0; i < 200 && !closed; i++) {
    closed = server_.StderrText().find("session 1 closed (peer gone") !=
             std::string::npos;
    if (!closed) usleep(100 * 1000);
  }
  EXPECT_TRUE(closed) << "the hog was not closed";
  const std::string log = server_.StderrText();
  EXPECT_TRUE(log.find("client does not take its replies") !=
                  std::string::npos ||
              log.find("send failed") != std::string::npos)
      << "closed for another reason";
  EXPECT_TRUE(hog.WaitClosed(milliseconds(5000)));
  // And the server still serves.
  RawClient later;
  protocol::Accept la;
  ConnectOk(&later, "default", &la, 0, /*take_grant=*/false);
  EXPECT_GE(StatValue(Info(&later, protocol::InfoTopic::kStats), "puts"), 20);
}

}  // namespace
}  // namespace kv::e2e
