// What one client can make kvserver hold (server/README.md, "Limits"):
// each test runs an attack with real processes and shows an honest client
// connecting and putting meanwhile. Every wait is bounded; the only
// timing assertions are lower bounds on the server's deliberate delays.
#include <dirent.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "server_test_util.h"

namespace kv::e2e {
namespace {

using protocol::Admit;
using Clock = std::chrono::steady_clock;

class ServerBoundsTest : public InMemoryServerTest {
 protected:
  // A stat of a fresh connection's INFO.
  long long Stat(const std::string& name) {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, "default", &a, 0, /*take_grant=*/false);
    return StatValue(Info(&c, protocol::InfoTopic::kStats), name);
  }
  // An honest writer: connects by name, puts `n` values of `size` bytes
  // (refilling, and retrying busy REFILLs, as the client library does).
  // Returns the number of puts that failed; *why gets the first failure.
  int HonestPuts(int n, size_t size, const std::string& prefix,
                 std::string* why, int keys = 0) {
    RawClient c;
    Status st = c.ConnectTo(server_.host(), server_.port(), "default");
    protocol::Accept a;
    if (st.ok()) st = c.accept(&a);
    if (!st.ok() || a.admit != Admit::kOk) {
      *why = "connect: " + st.ToString() + " " + a.reason;
      return n;
    }
    Putter p{&c, a, a.grant, a.grant.start};
    int failed = 0;
    const std::string value(size, 'h');
    for (int i = 0; i < n; i++) {
      st = p.Put(prefix + std::to_string(keys > 0 ? i % keys : i), value,
                 100 + i);
      if (!st.ok()) {
        if (failed++ == 0) *why = st.ToString();
        if (!c.connected()) return n - i + failed - 1;
      }
    }
    // As the client library does: BYE returns the grant's tail.
    (void)c.SendMessage(protocol::Type::kBye, "");
    c.WaitClosed(milliseconds(2000));
    return failed;
  }
  // Connects a HELLO-flow client and returns the accept (no HELLO sent).
  Admit HelloConnect(RawClient* c) {
    Status st = c->Connect(server_.host(), server_.port(),
                           ConnectPdata("", protocol::kConnectHello));
    protocol::Accept a;
    if (!st.ok() || !c->accept(&a).ok()) return Admit::kServerError;
    return a.admit;
  }
  // /proc/<kvserver>/status field (Threads, VmRSS) or the fd count.
  long long ProcStatus(const std::string& field) {
    std::ifstream f("/proc/" + std::to_string(server_.pid()) + "/status");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind(field + ":", 0) == 0) {
        return atoll(line.c_str() + field.size() + 1);
      }
    }
    return -1;
  }
  long long OpenFds() {
    const std::string dir = "/proc/" + std::to_string(server_.pid()) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return -1;
    long long n = 0;
    while (readdir(d) != nullptr) n++;
    closedir(d);
    return n - 2;
  }
  std::string WriteKeys(const std::string& text) {
    const std::string path = dir_ + "/keys";
    std::ofstream(path) << text;
    chmod(path.c_str(), 0600);
    return path;
  }
};

// 123 admitted, idle connections hold no segment (lazy grants): the
// accept carries none, the keyspace has none open, and an honest client
// still gets one and puts. (Before: every admission took a segment and
// the honest put got no_space.)
TEST_F(ServerBoundsTest, IdleConnectionsHoldNoSegment) {
  StartServer();
  const long long segments = Stat("keyspace.default.segments");
  ASSERT_GT(segments, 0);
  ASSERT_LT(segments, 123) << "the attack needs more connections than segments";
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 123; i++) {
    idle.push_back(std::make_unique<RawClient>());
    protocol::Accept a;
    ConnectOk(idle.back().get(), "default", &a, 0, /*take_grant=*/false);
    ASSERT_EQ(a.grant.size, 0u) << "connection " << i << " got a grant";
  }
  EXPECT_EQ(Stat("keyspace.default.open_segments"), 0);
  std::string why;
  EXPECT_EQ(HonestPuts(40, 1000, "h", &why), 0) << why;
}

// One connection in a REFILL loop: the token bucket answers busy ("retry
// in N ms") beyond --refill_burst + --refill_rate per second, so it can
// seal segments only that fast; an honest writer's 40 puts (needing 8
// grants) all succeed meanwhile. (Before: 120 segments/s, 36-38
// of 40 honest puts failed.)
TEST_F(ServerBoundsTest, RefillLoopIsRateLimited) {
  StartServer({"--refill_rate=5", "--refill_burst=4"});
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::string busy_message;
  double attack_secs = 0;
  std::thread attacker([&] {
    RawClient c;
    protocol::Accept a;
    Status st = c.ConnectTo(server_.host(), server_.port(), "default");
    if (!st.ok() || !c.accept(&a).ok()) return;
    const auto t0 = Clock::now();
    while (!stop.load()) {
      protocol::RefillAck ack;
      if (!Refill(&c, a, &ack).ok()) break;
      if (ack.status == StatusCode::kOk) {
        ok++;
      } else if (ack.status == StatusCode::kBusy) {
        if (busy++ == 0) busy_message = ack.message;
      } else {
        other++;
      }
    }
    attack_secs = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  // The honest writer overwrites 4 keys with 200 KiB values: 5 fill a
  // 1 MiB segment, so its 40 puts need 8 grants; little stays live.
  std::string why;
  const int failed = HonestPuts(40, 200 << 10, "h", &why, /*keys=*/4);
  stop = true;
  attacker.join();
  fprintf(stderr, "refill loop: %d granted, %d busy in %.2f s\n", ok.load(),
          busy.load(), attack_secs);
  EXPECT_EQ(failed, 0) << why;
  EXPECT_GT(busy.load(), 0);
  EXPECT_NE(busy_message.find("retry in "), std::string::npos) << busy_message;
  // The bucket's guarantee, whatever the speed of this machine.
  EXPECT_LE(ok.load(), 4 + 5 * attack_secs + 1);
}

// Connections without a grant get one only while the keyspace has fewer
// than its share (--grant_share_percent) of segments granted: more
// connections than segments each asking for one cannot take them all.
// An honest writer that holds a grant keeps refilling (a refill replaces
// a grant, it adds none) and puts through several segments meanwhile.
TEST_F(ServerBoundsTest, KeyspaceShareBoundsOpenGrants) {
  StartServer({"--grant_share_percent=50"});
  const long long segments = Stat("keyspace.default.segments");
  ASSERT_GT(segments, 2);
  // The honest writer is admitted and holds a grant.
  RawClient honest;
  protocol::Accept ha;
  ConnectOk(&honest, "default", &ha);
  ASSERT_GT(ha.grant.size, 0u);
  Putter p{&honest, ha, ha.grant, ha.grant.start};
  ASSERT_TRUE(p.Put("h0", "v", 1).ok());
  // The attack: more connections than segments, each takes a grant.
  std::vector<std::unique_ptr<RawClient>> takers;
  int granted = 0, refused = 0;
  std::string refusal;
  for (long long i = 0; i < segments + 8; i++) {
    takers.push_back(std::make_unique<RawClient>());
    protocol::Accept a;
    ConnectOk(takers.back().get(), "default", &a, 0, /*take_grant=*/false);
    protocol::RefillAck ack;
    ASSERT_TRUE(Refill(takers.back().get(), a, &ack).ok());
    if (ack.status == StatusCode::kOk) {
      granted++;
    } else {
      refused++;
      if (refusal.empty()) refusal = ack.message;
      EXPECT_EQ(ack.status, StatusCode::kBusy) << ack.message;
    }
  }
  fprintf(stderr, "%lld segments: %d granted, %d busy\n", segments, granted,
          refused);
  // At most half the segments are open, the honest writer's included.
  EXPECT_LE(granted + 1, segments * 50 / 100);
  EXPECT_GT(refused, 0);
  EXPECT_NE(refusal.find("--grant_share_percent"), std::string::npos)
      << refusal;
  // Meanwhile the honest writer fills four segments' worth.
  const std::string big(300 << 10, 'b');
  for (int i = 1; i <= 12; i++) {
    Status st = p.Put("h" + std::to_string(i), big, 10 + i);
    ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
  }
  // Grants come back when their connections end: a new writer gets one.
  takers.clear();
  bool put = false;
  std::string why;
  for (int i = 0; i < 50 && !put; i++) {
    put = HonestPuts(1, 100, "late", &why) == 0;
    if (!put) usleep(50000);
  }
  EXPECT_TRUE(put) << why;
}

// Connections that never send HELLO: at most --max_pending_hello wait at
// once (the rest are refused "too many connections" at once), so they
// cannot fill --max_connections; honest named connects get in and put
// throughout, and an honest HELLO gets in once the silent ones time out.
// (Before: 254 silent connects kept honest connects at 1 in 32.)
TEST_F(ServerBoundsTest, SilentHelloConnectionsHaveTheirOwnCap) {
  StartServer({"--max_connections=24", "--max_pending_hello=8",
               "--hello_timeout_ms=2000"});
  std::vector<std::unique_ptr<RawClient>> silent;
  int waiting = 0, refused = 0;
  for (int i = 0; i < 40; i++) {
    silent.push_back(std::make_unique<RawClient>());
    const Admit admit = HelloConnect(silent.back().get());
    waiting += admit == Admit::kHelloRequired;
    refused += admit == Admit::kTooManyConnections;
  }
  fprintf(stderr, "40 silent HELLO connects: %d wait, %d refused\n", waiting,
          refused);
  EXPECT_LE(waiting, 8);
  EXPECT_GE(refused, 32);
  // Honest named connects, while the silent ones still wait.
  for (int i = 0; i < 5; i++) {
    std::string why;
    EXPECT_EQ(HonestPuts(2, 100, "n" + std::to_string(i) + "_", &why), 0)
        << why;
  }
  // Once the silent ones timed out, an honest HELLO is admitted.
  bool admitted = false;
  for (int i = 0; i < 100 && !admitted; i++) {
    RawClient c;
    if (HelloConnect(&c) == Admit::kHelloRequired &&
        c.SendMessage(protocol::Type::kHello, HelloPayload("default", ""), 3)
            .ok()) {
      protocol::Header h;
      std::string payload;
      protocol::Accept w;
      admitted =
          c.ReceiveMessage(&h, &payload).ok() &&
          protocol::DecodeAccept(payload.data(), payload.size(), &w).ok() &&
          w.admit == Admit::kReconnect && Reconnect(&c, w).admit == Admit::kOk;
    }
    if (!admitted) usleep(50000);
  }
  EXPECT_TRUE(admitted);
}

// Admitted connections that hold --max_connections and send nothing are
// ended after --idle_timeout_ms (ERROR timed_out, grant returned): an
// honest client refused while they held every slot gets in and puts.
// (Before: 254 idle connections refused honest clients for as long as
// they stayed.)
TEST_F(ServerBoundsTest, IdleTimeoutFreesConnectionsAndGrants) {
  // 3 s: the 8 connects and the refused 9th must all happen before the
  // first idle connection times out, also on a loaded machine.
  StartServer({"--max_connections=8", "--idle_timeout_ms=3000"});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 8; i++) {
    idle.push_back(std::make_unique<RawClient>());
    protocol::Accept a;
    ConnectOk(idle.back().get(), "default", &a);  // each takes a grant
  }
  {
    RawClient c;
    protocol::Accept r = ConnectRaw(&c, ConnectPdata("default"));
    EXPECT_EQ(r.admit, Admit::kTooManyConnections) << r.reason;
  }
  // The idle ones are told why and closed.
  protocol::Header h;
  std::string payload;
  ASSERT_TRUE(idle[0]->ReceiveMessage(&h, &payload, milliseconds(10000)).ok());
  EXPECT_EQ(h.type, protocol::Type::kError);
  EXPECT_NE(payload.find("--idle_timeout_ms"), std::string::npos) << payload;
  EXPECT_TRUE(idle[0]->WaitClosed(milliseconds(5000)));
  bool put = false;
  std::string why;
  for (int i = 0; i < 100 && !put; i++) {
    put = HonestPuts(10, 100, "h", &why) == 0;
    if (!put) usleep(50000);
  }
  EXPECT_TRUE(put) << why;
  EXPECT_TRUE(server_.WaitForLog("closed (idle timeout"));
  // Their grants were returned: only the honest writer's may be open.
  EXPECT_LE(Stat("keyspace.default.open_segments"), 1);
}

// Wrong access keys: each refusal waits at least --auth_delay_ms, longer
// after recent failures; the guesser runs in parallel connections, but
// only --max_pending_hello of them can wait at once, and the honest
// client with the right key gets in and puts meanwhile. (Before: 2,700-
// 4,500 guesses/s with no slowdown.)
TEST_F(ServerBoundsTest, WrongAccessKeysAreDelayed) {
  const std::string key = "0123456789abcdef-right";
  StartServer({"--access_keys=" + WriteKeys("default " + key + "\n"),
               "--auth_delay_ms=300", "--auth_delay_max_ms=1500",
               "--max_pending_hello=8"});
  std::atomic<bool> stop{false};
  std::atomic<int> guesses{0};
  std::vector<double> first_delays;
  std::mutex mu;
  std::vector<std::thread> guessers;
  for (int t = 0; t < 4; t++) {
    guessers.emplace_back([&, t] {
      for (int i = 0; !stop.load() && i < 200; i++) {
        RawClient c;
        if (HelloConnect(&c) != Admit::kHelloRequired) {
          usleep(10000);
          continue;
        }
        const auto t0 = Clock::now();
        if (!c.SendMessage(
                  protocol::Type::kHello,
                  HelloPayload("default",
                               "wrong-guess-" + std::to_string(t * 1000 + i)),
                  3)
                 .ok()) {
          continue;
        }
        protocol::Header h;
        std::string payload;
        protocol::Accept w;
        if (!c.ReceiveMessage(&h, &payload, milliseconds(10000)).ok() ||
            !protocol::DecodeAccept(payload.data(), payload.size(), &w).ok()) {
          continue;
        }
        const double ms =
            std::chrono::duration<double, std::milli>(Clock::now() - t0)
                .count();
        EXPECT_EQ(w.admit, Admit::kAccessDenied);
        guesses++;
        std::lock_guard<std::mutex> lock(mu);
        first_delays.push_back(ms);
      }
    });
  }
  // The honest client, with the right key, during the guessing.
  usleep(500000);
  bool admitted = false;
  for (int i = 0; i < 100 && !admitted; i++) {
    RawClient c;
    if (HelloConnect(&c) != Admit::kHelloRequired) {
      usleep(20000);
      continue;
    }
    ASSERT_TRUE(
        c.SendMessage(protocol::Type::kHello, HelloPayload("default", key), 3)
            .ok());
    protocol::Header h;
    std::string payload;
    protocol::Accept w;
    ASSERT_TRUE(c.ReceiveMessage(&h, &payload).ok());
    ASSERT_TRUE(
        protocol::DecodeAccept(payload.data(), payload.size(), &w).ok());
    ASSERT_EQ(w.admit, Admit::kReconnect) << w.reason;
    w = Reconnect(&c, w);
    ASSERT_EQ(w.admit, Admit::kOk) << w.reason;
    protocol::RefillAck rack;
    ASSERT_TRUE(RefillRetrying(&c, w, &rack).ok());
    ASSERT_EQ(rack.status, StatusCode::kOk) << rack.message;
    w.grant = rack.grant;
    admitted = true;
    Putter p{&c, w, w.grant, w.grant.start};
    for (int k = 0; k < 10; k++) {
      Status st = p.Put("h" + std::to_string(k), "v", 10 + k);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  }
  EXPECT_TRUE(admitted);
  usleep(1500000);
  stop = true;
  for (std::thread& t : guessers) t.join();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(first_delays.size(), 8u);
  double longest = 0;
  for (double ms : first_delays) {
    EXPECT_GE(ms, 300.0) << "a wrong key was refused before --auth_delay_ms";
    longest = std::max(longest, ms);
  }
  fprintf(stderr, "%d wrong keys, refusal delay %.0f..%.0f ms\n",
          guesses.load(), first_delays.front(), longest);
  // Recent failures make it grow (10% of the base per failure).
  EXPECT_GE(longest, 300.0 * 1.3);
}

// Connect/disconnect cycles of every kind (named + put, HELLO + HELLO,
// silent HELLO, idle) leave the server's fds and threads where they
// were once the sessions have ended (RSS printed).
TEST_F(ServerBoundsTest, ConnectCyclesLeaveNothingBehind) {
  StartServer({"--hello_timeout_ms=300"});
  {
    std::string why;
    ASSERT_EQ(HonestPuts(1, 10, "warm", &why), 0) << why;
  }
  auto settled = [&](long long fds, long long threads) {
    for (int i = 0; i < 200; i++) {
      if (OpenFds() <= fds && ProcStatus("Threads") <= threads) return true;
      usleep(50000);
    }
    return false;
  };
  ASSERT_TRUE(settled(1 << 20, 1 << 20));
  usleep(300000);
  const long long fds0 = OpenFds(), threads0 = ProcStatus("Threads");
  const long long rss0 = ProcStatus("VmRSS");
  for (int i = 0; i < 1000; i++) {
    RawClient c;
    switch (i % 4) {
      case 0: {
        std::string why;
        EXPECT_EQ(HonestPuts(1, 10, "c" + std::to_string(i) + "_", &why), 0)
            << why;
        break;
      }
      case 1:
        if (HelloConnect(&c) == Admit::kHelloRequired) {
          (void)c.SendMessage(protocol::Type::kHello,
                              HelloPayload("default", ""), 3);
          protocol::Header h;
          std::string payload;
          (void)c.ReceiveMessage(&h, &payload);
        }
        break;
      case 2:
        (void)HelloConnect(&c);  // silent: the hello timeout ends it
        break;
      case 3:
        (void)c.ConnectTo(server_.host(), server_.port(), "default");
        break;
    }
  }
  EXPECT_TRUE(settled(fds0, threads0))
      << "fds " << fds0 << " -> " << OpenFds() << ", threads " << threads0
      << " -> " << ProcStatus("Threads");
  fprintf(stderr,
          "1000 cycles: fds %lld -> %lld, threads %lld -> %lld, "
          "RSS %lld -> %lld kB\n",
          fds0, OpenFds(), threads0, ProcStatus("Threads"), rss0,
          ProcStatus("VmRSS"));
}

// A key shorter than 16 bytes is refused when the file is loaded, naming
// the file and the line.
TEST_F(ServerBoundsTest, ShortAccessKeyIsRefusedAtStart) {
  const std::string keys = WriteKeys("# keys\ndefault short-key\n");
  std::string err;
  EXPECT_EQ(RunToExit({KvserverPath(), "--pool=" + pool_, "--pool_size=64M",
                       "--access_keys=" + keys},
                      &err),
            3)
      << err;
  EXPECT_NE(err.find(keys), std::string::npos) << err;
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
  EXPECT_NE(err.find("at least 16"), std::string::npos) << err;
}

// Every limit is a flag, listed by --help with its default; bad values
// are a usage error (exit 2).
TEST_F(ServerBoundsTest, HelpListsEveryLimitAndBadValuesExitWith2) {
  std::string out;
  EXPECT_EQ(RunToExit({KvserverPath(), "--help"}, &out), 0);
  for (const char* flag :
       {"--max_pending_hello", "--hello_timeout_ms", "--idle_timeout_ms",
        "--refill_rate", "--refill_burst", "--grant_share_percent",
        "--auth_delay_ms", "--auth_delay_max_ms"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
  for (const char* bad :
       {"--max_pending_hello=0", "--refill_rate=0", "--refill_burst=0",
        "--grant_share_percent=0", "--grant_share_percent=101",
        "--hello_timeout_ms=0", "--auth_delay_ms=3000",
        "--auth_delay_max_ms=20000"}) {
    std::string err;
    EXPECT_EQ(RunToExit({KvserverPath(), "--pool=" + pool_, bad}, &err), 2)
        << bad << ": " << err;
  }
}

}  // namespace
}  // namespace kv::e2e
