// kvserver's lifecycle: clean shutdown and restart, kill -9 and recovery,
// the writer lock, bad peers (killed clients, connection floods, garbage
// messages), INFO.
#include <sys/stat.h>

#include <set>

#include "kv/store/pool.h"
#include "server_test_util.h"

#ifndef KV_E2E_RAW_PUTTER_PATH
#error "KV_E2E_RAW_PUTTER_PATH must name kv_e2e_raw_putter"
#endif

namespace kv::e2e {
namespace {

using protocol::Admit;

class ServerLifecycleTest : public ServerTest {
 protected:
  // Puts keys k0..k{n-1} = v<i> on one connection; returns the count acked.
  int PutMany(int n, const std::string& prefix = "k") {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, "default", &a);
    uint64_t tail = a.grant.start;
    int acked = 0;
    for (int i = 0; i < n; i++) {
      const std::string key = prefix + std::to_string(i);
      protocol::CommitAck ack;
      Status st = PutRaw(&c, a, a.grant, tail, key, "v" + std::to_string(i),
                         &ack, false, i);
      if (!st.ok() || ack.status != StatusCode::kOk) break;
      tail +=
          record_format::RecordSize(key.size(), 1 + std::to_string(i).size());
      acked++;
    }
    return acked;
  }
  // Opens the pool read-only (server stopped) and checks k0..k{n-1}.
  void ExpectKeys(int n, const std::string& prefix = "k") {
    store::PoolOptions ro;
    ro.read_only = true;
    auto pool = store::Pool::Open(pool_, ro);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    auto ks = (*pool)->GetKeyspace("default");
    ASSERT_TRUE(ks.ok());
    for (int i = 0; i < n; i++) {
      std::string value;
      Status st = (*ks)->Get(prefix + std::to_string(i), &value);
      ASSERT_TRUE(st.ok()) << prefix << i << ": " << st.ToString();
      EXPECT_EQ(value, "v" + std::to_string(i));
    }
  }
  // A message the server must answer with ERROR and a disconnect.
  void ExpectErrorAndClose(const std::string& raw) {
    RawClient c;
    protocol::Accept a;
    ConnectOk(&c, "default", &a);
    ASSERT_TRUE(c.SendRaw(raw).ok());
    protocol::Header h;
    std::string payload;
    Status st = c.ReceiveMessage(&h, &payload);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(h.type, protocol::Type::kError);
    StatusCode code;
    std::string text;
    ASSERT_TRUE(protocol::DecodeStatusText(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &code, &text)
                    .ok());
    EXPECT_EQ(code, StatusCode::kInvalidArgument);
    EXPECT_FALSE(text.empty());
    EXPECT_TRUE(c.WaitClosed()) << "no disconnect after ERROR";
  }
};

TEST_F(ServerLifecycleTest, SigtermShutsDownCleanlyAndRestartNeedsNoRepair) {
  StartServer();
  ASSERT_EQ(PutMany(50), 50);
  // A client still connected at shutdown is disconnected, not waited for.
  RawClient idle;
  protocol::Accept a;
  ConnectOk(&idle, "default", &a);
  EXPECT_EQ(server_.Stop(), 0);
  EXPECT_TRUE(idle.WaitClosed());
  const std::string log = server_.StderrText();
  EXPECT_NE(log.find("pool closed cleanly"), std::string::npos) << log;
  ExpectKeys(50);
  ASSERT_TRUE(server_.Restart().ok());
  EXPECT_EQ(server_.Stop(), 0);
  EXPECT_EQ(server_.StderrText().find("recovery:"), std::string::npos)
      << server_.StderrText();
}

TEST_F(ServerLifecycleTest, SigtermFinishesCommitsInFlight) {
  StartServer();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  // 20 records written, their COMMITs sent back to back, then SIGTERM
  // before reading any ack.
  constexpr int kN = 20;
  uint64_t tail = a.grant.start;
  for (int i = 0; i < kN; i++) {
    const std::string key = "f" + std::to_string(i);
    std::string rec = EncodeTestRecord(a.keyspace_id, key, "v");
    ASSERT_TRUE(c.Write(a.grant.write_desc, tail - a.grant.start, rec).ok());
    protocol::Commit cm;
    cm.segment = a.grant.segment;
    cm.grant_id = a.grant.grant_id;
    cm.offset = tail;
    cm.length = static_cast<uint32_t>(rec.size());
    cm.key_hash = index_format::HashKey(key);
    ASSERT_TRUE(
        c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), i).ok());
    tail += rec.size();
  }
  kill(server_.pid(), SIGTERM);
  int acked = 0;
  for (int i = 0; i < kN; i++) {
    protocol::Header h;
    std::string payload;
    if (!c.ReceiveMessage(&h, &payload, std::chrono::seconds(5)).ok()) break;
    protocol::CommitAck ack;
    ASSERT_TRUE(protocol::DecodeCommitAck(
                    reinterpret_cast<const uint8_t*>(payload.data()),
                    payload.size(), &ack)
                    .ok());
    EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
    EXPECT_EQ(h.request_id, static_cast<uint32_t>(i));  // in order
    acked++;
  }
  EXPECT_EQ(server_.Wait(), 0);
  // Everything the server had received was committed and acknowledged.
  EXPECT_EQ(acked, kN);
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok());
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  for (int i = 0; i < acked; i++) {
    std::string v;
    EXPECT_TRUE((*ks)->Get("f" + std::to_string(i), &v).ok()) << i;
  }
}

TEST_F(ServerLifecycleTest, SigintIsACleanShutdownToo) {
  StartServer();
  kill(server_.pid(), SIGINT);
  EXPECT_EQ(server_.Wait(), 0);
}

TEST_F(ServerLifecycleTest, Kill9KeepsEveryAcknowledgedCommit) {
  StartServer();
  // A client mid-put while the server dies.
  ChildProcess putter;
  ASSERT_TRUE(putter
                  .Start({KV_E2E_RAW_PUTTER_PATH, server_.host(),
                          std::to_string(server_.port()), "default", "1000000"})
                  .ok());
  ASSERT_TRUE(putter.WaitForOutput("acked 200"));
  EXPECT_EQ(server_.Kill9(), 128 + SIGKILL);
  putter.Kill9();
  // Every "acked i" the putter printed is in the pool.
  const std::string out = putter.Output();
  int acked = -1;
  for (size_t at = out.find("acked "); at != std::string::npos;
       at = out.find("acked ", at + 1)) {
    acked = atoi(out.c_str() + at + 6);
  }
  ASSERT_GE(acked, 200);
  ExpectKeys(acked + 1);
  // The server restarts (recovering) and serves.
  ASSERT_TRUE(server_.Restart().ok());
  // The restart says what it found and how long the check took.
  EXPECT_TRUE(server_.WaitForLog("recovery: the pool was not closed cleanly"))
      << server_.StderrText();
  EXPECT_NE(server_.StderrText().find("keyspace 'default' checked in "),
            std::string::npos)
      << server_.StderrText();
  ASSERT_EQ(PutMany(5, "after"), 5);
  EXPECT_EQ(server_.Stop(), 0);
  ExpectKeys(5, "after");
}

TEST_F(ServerLifecycleTest, ClientKilledMidPutIsSealedOthersUnaffected) {
  // The cleaner off: the dead client's sealed segment is almost all dead
  // bytes, and a cleaner run (every 200 ms) holds a segment of its own
  // open while it copies, which the count below would see.
  StartServer({"--cleaner_threshold=1"});
  ChildProcess putter;
  ASSERT_TRUE(putter
                  .Start({KV_E2E_RAW_PUTTER_PATH, server_.host(),
                          std::to_string(server_.port()), "default", "20"})
                  .ok());
  ASSERT_TRUE(putter.WaitForOutput("mid-put"));
  // Meanwhile another client keeps working, before and after the kill.
  RawClient other;
  protocol::Accept a;
  ConnectOk(&other, "default", &a);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&other, a, a.grant, a.grant.start, "o1", "x", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk);
  putter.Kill9();
  EXPECT_TRUE(server_.WaitForLog("closed (peer gone"));
  ASSERT_TRUE(
      PutRaw(&other, a, a.grant, a.grant.start + 64, "o2", "y", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
  // The session is logged closed when its ending starts; it stops counting
  // as active when the ending is over (after the disconnect, bounded).
  std::string stats = Info(&other, protocol::InfoTopic::kStats);
  for (int i = 0; i < 100 && StatValue(stats, "connections_active") != 1; i++) {
    usleep(50000);
    stats = Info(&other, protocol::InfoTopic::kStats);
  }
  EXPECT_EQ(StatValue(stats, "sessions_lost"), 1) << stats;
  EXPECT_EQ(StatValue(stats, "connections_active"), 1) << stats;
  // Only `other` holds a segment open: the dead client's grant is sealed.
  EXPECT_EQ(StatValue(stats, "keyspace.default.open_segments"), 1) << stats;
  EXPECT_EQ(StatValue(stats, "keyspace.default.sealed_segments"), 1) << stats;
  other.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
  ExpectKeys(20);
  // What the dead client wrote but never committed is not visible.
  store::PoolOptions ro;
  ro.read_only = true;
  auto pool = store::Pool::Open(pool_, ro);
  ASSERT_TRUE(pool.ok());
  std::string value;
  auto ks = (*pool)->GetKeyspace("default");
  ASSERT_TRUE(ks.ok());
  EXPECT_TRUE((*ks)->Get("uncommitted", &value).IsNotFound());
}

TEST_F(ServerLifecycleTest, SecondServerOnTheSamePoolIsRefused) {
  StartServer();
  std::string err;
  int code = RunToExit({KvserverPath(), "--pool=" + pool_,
                        "--listen=127.0.0.1:" + std::to_string(PickFreePort())},
                       &err);
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("busy"), std::string::npos) << err;
  EXPECT_NE(err.find("another kvserver"), std::string::npos) << err;
  // The first one is unaffected.
  ASSERT_EQ(PutMany(3), 3);
}

TEST_F(ServerLifecycleTest, ListenAddressInUseExitsWith3) {
  StartServer();
  std::string err;
  int code = RunToExit({KvserverPath(), "--pool=" + dir_ + "/other",
                        "--pool_size=64M", "--listen=" + server_.address()},
                       &err);
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("cannot listen"), std::string::npos) << err;
  // Checked before the pool: no 64 MiB file left behind.
  EXPECT_NE(access((dir_ + "/other").c_str(), F_OK), 0)
      << "a pool file was created although the port was taken";
}

// The smallest pool is one that holds its default keyspace: a smaller
// --pool_size is refused before a file is made, naming the size that
// works (before: 16M passed the check, then failed with "no room for
// another keyspace" and left a pool with no keyspace behind).
TEST_F(ServerLifecycleTest, PoolTooSmallForTheDefaultKeyspaceLeavesNoFile) {
  const std::string small = dir_ + "/small";
  std::string err;
  int code = RunToExit({KvserverPath(), "--pool=" + small, "--pool_size=16M",
                        "--listen=127.0.0.1:" + std::to_string(PickFreePort())},
                       &err);
  EXPECT_EQ(code, 3) << err;
  EXPECT_NE(err.find("cannot hold the default keyspace"), std::string::npos)
      << err;
  EXPECT_NE(access(small.c_str(), F_OK), 0) << "a pool file was left behind";
  const size_t at = err.find("use --pool_size=");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string size =
      err.substr(at + 16, err.find('M', at + 16) - (at + 16) + 1);
  // The size it names works.
  Status st = server_.Start({"--pool=" + small, "--pool_size=" + size});
  ASSERT_TRUE(st.ok()) << size << ": " << st.ToString();
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  protocol::CommitAck ack;
  ASSERT_TRUE(PutRaw(&c, a, a.grant, a.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk) << ack.message;
}

TEST_F(ServerLifecycleTest, BadCommandLinesExitWith2) {
  const std::vector<std::vector<std::string>> bad = {
      {"--pool=" + pool_, "--no_such_flag=1"},
      {"--pool=" + pool_, "--max_connections=many"},
      {"--pool=" + pool_, "--pool_size=12Q"},
      {"--pool=" + pool_, "--segment_size=1000"},
      {"--pool=" + pool_, "--provider=carrier-pigeon"},
      {"--pool=" + pool_, "--listen=nowhere"},
      {"--pool=" + pool_, "--cleaner_threshold=2"},
      {"--pool_size=64M"},
      {"--pool=" + pool_, "stray"},
  };
  for (const auto& flags : bad) {
    std::vector<std::string> argv{KvserverPath()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::string err;
    EXPECT_EQ(RunToExit(argv, &err), 2) << flags.back() << ": " << err;
    EXPECT_NE(err.find("kvserver: "), std::string::npos) << err;
  }
  struct stat st;
  EXPECT_NE(stat(pool_.c_str(), &st), 0) << "a bad command line created a pool";
}

TEST_F(ServerLifecycleTest, HelpListsOwnFlagsOnly) {
  std::string out;
  EXPECT_EQ(RunToExit({KvserverPath(), "--help"}, &out), 0);
  for (const char* flag :
       {"--pool ", "--pool_size", "--listen", "--provider", "--segment_size",
        "--index_capacity", "--max_connections", "--allow_create",
        "--access_keys", "--cleaner_threshold"}) {
    EXPECT_NE(out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(out.find("flagfile"), std::string::npos) << out;
  EXPECT_EQ(out.find("gflags"), std::string::npos) << out;
}

TEST_F(ServerLifecycleTest, GarbageMessagesGetErrorAndDisconnect) {
  StartServer();
  auto header = [](protocol::Type t, uint32_t len) {
    std::string h(protocol::kHeaderSize, '\0');
    protocol::Header hd;
    hd.type = t;
    hd.length = len;
    protocol::EncodeHeader(hd, reinterpret_cast<uint8_t*>(h.data()));
    return h;
  };
  ExpectErrorAndClose("garbage!");               // short
  ExpectErrorAndClose(std::string(64, '\xff'));  // bad magic
  std::string v = header(protocol::Type::kInfo, 1) + '\0';
  v[2] = 9;
  ExpectErrorAndClose(v);  // version
  std::string t = header(protocol::Type::kInfo, 1) + '\0';
  t[3] = 99;
  ExpectErrorAndClose(t);                                           // type
  ExpectErrorAndClose(header(protocol::Type::kInfo, 4000));         // length
  ExpectErrorAndClose(header(protocol::Type::kCommit, 3) + "abc");  // short
  ExpectErrorAndClose(header(protocol::Type::kCommitAck, 0));       // s->c
  ExpectErrorAndClose(header(protocol::Type::kHello, 0));           // no flag
  ExpectErrorAndClose(header(protocol::Type::kInfo, 1) + '\x09');   // topic
  std::string c = header(protocol::Type::kCommit, protocol::kCommitSize) +
                  std::string(protocol::kCommitSize, '\0');
  c[protocol::kHeaderSize] = 5;
  ExpectErrorAndClose(c);  // unknown op
  // The server keeps serving.
  ASSERT_EQ(PutMany(2), 2);
}

TEST_F(ServerLifecycleTest, InfoTopics) {
  StartServer();
  ASSERT_EQ(PutMany(3), 3);
  RawClient c;
  protocol::Accept a;
  ConnectOk(&c, "default", &a);
  const std::string stats = Info(&c, protocol::InfoTopic::kStats);
  EXPECT_EQ(StatValue(stats, "puts"), 3) << stats;
  EXPECT_EQ(StatValue(stats, "commits"), 3) << stats;
  EXPECT_EQ(StatValue(stats, "connections_active"), 1) << stats;
  EXPECT_EQ(StatValue(stats, "keyspace.default.keys"), 3) << stats;
  EXPECT_GT(StatValue(stats, "keyspace.default.live_bytes"), 0) << stats;
  EXPECT_GE(StatValue(stats, "keyspace.default.dead_bytes"), 0) << stats;
  EXPECT_EQ(Info(&c, protocol::InfoTopic::kKeyspaces), "default\n");
  const std::string server = Info(&c, protocol::InfoTopic::kServer);
  EXPECT_NE(server.find("provider tcp\n"), std::string::npos) << server;
  EXPECT_NE(server.find("granularity page\n"), std::string::npos) << server;
  EXPECT_NE(server.find("segment_size 1048576\n"), std::string::npos);
  // The ping carries the server's clock (protocol 4, docs/protocol.md).
  uint64_t server_ms = 0;
  EXPECT_TRUE(
      protocol::ParsePingText(Info(&c, protocol::InfoTopic::kPing), &server_ms)
          .ok());
  EXPECT_GT(server_ms, 0u);
  // BYE: the server returns the grant and disconnects.
  ASSERT_TRUE(c.SendMessage(protocol::Type::kBye, "").ok());
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(server_.WaitForLog("closed (bye)"));
}

TEST_F(ServerLifecycleTest, ThousandConnectionAttemptsDoNotHurt) {
  StartServer({"--max_connections=64", "--hello_timeout_ms=500"});
  RawClient keeper;
  protocol::Accept ka;
  ConnectOk(&keeper, "default", &ka);
  const auto t0 = std::chrono::steady_clock::now();
  int connected = 0;
  for (int i = 0; i < 1000; i++) {
    RawClient c;
    std::optional<std::string> pdata;
    switch (i % 5) {
      case 0:
        pdata = std::nullopt;
        break;  // none
      case 1:
        pdata = std::string(20, static_cast<char>(i));
        break;  // junk
      case 2:
        pdata = ConnectPdata("default");
        break;  // good
      case 3:
        pdata = ConnectPdata("", protocol::kConnectHello);
        break;
      case 4:
        pdata = ConnectPdata("nosuch");
        break;
    }
    Status st = c.Connect(server_.host(), server_.port(), pdata,
                          std::chrono::milliseconds(3000));
    connected += st.ok();
    if (i % 2 == 0) c.Abandon();  // vanish without a disconnect
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  fprintf(stderr, "1000 connection attempts: %.2f s\n", secs);
  // Each one reached the server and got an answer (admitted or refused).
  EXPECT_EQ(connected, 1000);
  // Still serving, the first client included.
  protocol::CommitAck ack;
  ASSERT_TRUE(
      PutRaw(&keeper, ka, ka.grant, ka.grant.start, "k", "v", &ack).ok());
  EXPECT_EQ(ack.status, StatusCode::kOk);
  // Every other session ends (the HELLO ones by timeout).
  bool drained = false;
  for (int i = 0; i < 100 && !drained; i++) {
    drained = StatValue(Info(&keeper, protocol::InfoTopic::kStats),
                        "connections_active") == 1;
    if (!drained) usleep(50000);
  }
  EXPECT_TRUE(drained) << Info(&keeper, protocol::InfoTopic::kStats);
  keeper.Disconnect();
  EXPECT_EQ(server_.Stop(), 0);
}

}  // namespace
}  // namespace kv::e2e
