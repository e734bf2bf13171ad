// What a hostile peer can make the tcp provider's target hold (tcp/
// limits.h): the RNR stash and its RNR_RETRY_EXC_ERR ending, queued
// responses of a peer that never reads, 1,000 hostile connections against
// one Pd (resident memory measured), a stalled reader, and accept()
// failing with EMFILE.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "tcp/frame.h"
#include "tcp/limits.h"
#include "tcp/tcp_pd.h"
#include "tcp_data_fixture.h"

namespace rpma::prov::tcp_test {
namespace {

using tcp::FrameHeader;
using tcp::kHeaderSize;

// Small bounds and short timeouts, restored after each test.
class TcpLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = *tcp::MutableLimitsForTest();
    tcp::Limits* l = tcp::MutableLimitsForTest();
    l->max_stash_bytes = 64u << 10;
    l->rnr_retry_ms = 200;
    l->stall_ms = 300;
  }
  void TearDown() override { *tcp::MutableLimitsForTest() = saved_; }
  tcp::Limits saved_;
};

int64_t ResidentKiB() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

// ASan keeps freed memory in quarantine and adds shadow memory: resident
// figures are printed there, asserted only without it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

int64_t Held(Pd* pd) { return static_cast<tcp::TcpPd*>(pd)->HeldForPeers(); }

// --- RNR ------------------------------------------------------------------

class TcpRnrTest : public TcpDataTest {
 protected:
  void SetUp() override {
    saved_ = *tcp::MutableLimitsForTest();
    tcp::MutableLimitsForTest()->max_stash_bytes = 64u << 10;
    tcp::MutableLimitsForTest()->rnr_retry_ms = 200;
    TcpDataTest::SetUp();
  }
  void TearDown() override {
    TcpDataTest::TearDown();
    *tcp::MutableLimitsForTest() = saved_;
  }
  tcp::Limits saved_;
};

TEST_F(TcpRnrTest, RnrWaitWithinTheBoundsWaitsForTheReceive) {
  local_.assign(local_.size(), 0x42);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kSend, 1, 0, 16)), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kWrite, 2, 0, 1024)), 0);
  // Longer than the RNR budget: below the stash bound the wait is
  // infinite (librpma's rnr_retry 7).
  EXPECT_EQ(PollFor(p_.client.cq.get(), 600), 0);
  EXPECT_EQ(target_[0], 0);  // the write waits behind the SEND
  std::vector<uint8_t> rbuf(64);
  RecvWr r;
  r.wr_id = 9;
  r.sge = {rbuf.data(), 64, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(r), 0);
  auto wc = PollN(p_.client.cq.get(), 2);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(target_[1023], 0x42);
  auto rwc = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rwc[0].byte_len, 16u);
}

TEST_F(TcpRnrTest, RnrWaitAtTheStashBoundFailsWithRnrRetryExceeded) {
  // 7 writes of 16 KiB behind the SEND: 112 KiB, more than the 64 KiB
  // stash.
  std::vector<uint8_t> big(16 << 10, 0x77);
  std::unique_ptr<Mr> bmr;
  ASSERT_EQ(p_.client.pd->RegMr(big.data(), big.size(), kAll, &bmr), 0);
  std::vector<uint8_t> remote(16 << 10, 0);
  std::unique_ptr<Mr> rmr;
  ASSERT_EQ(p_.server.pd->RegMr(remote.data(), remote.size(), kAll, &rmr), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kSend, 1, 0, 16)), 0);
  for (int i = 0; i < 7; ++i) {
    SendWr w;
    w.opcode = Opcode::kWrite;
    w.wr_id = 10 + i;
    w.signaled = true;
    w.sge = {big.data(), static_cast<uint32_t>(big.size()), bmr->lkey()};
    w.remote_addr = reinterpret_cast<uint64_t>(remote.data());
    w.rkey = rmr->rkey();
    ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  }
  int64_t t0 = NowMs();
  auto wc = PollN(p_.client.cq.get(), 8, 5000);
  ASSERT_EQ(wc.size(), 8u);
  EXPECT_GE(NowMs() - t0, 150);  // the RNR budget was waited out
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  for (int i = 1; i < 8; ++i) EXPECT_EQ(wc[i].status, IBV_WC_WR_FLUSH_ERR);
  // The kept writes were dropped, never executed; nothing is held.
  EXPECT_EQ(remote, std::vector<uint8_t>(remote.size(), 0));
  // (The target accounts right after writing the response.)
  int64_t until = NowMs() + 1000;
  while (Held(p_.server.pd.get()) != 0 && NowMs() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(Held(p_.server.pd.get()), 0);
  // Both QPs are in error: a receive posted now flushes.
  std::vector<uint8_t> rbuf(64);
  RecvWr r;
  r.wr_id = 5;
  r.sge = {rbuf.data(), 64, 0};
  ASSERT_EQ(p_.server.qp()->PostRecv(r), 0);
  auto rwc = PollN(p_.server.cq.get(), 1);
  ASSERT_EQ(rwc.size(), 1u);
  EXPECT_EQ(rwc[0].status, IBV_WC_WR_FLUSH_ERR);
}

// --- Raw hostile peers ----------------------------------------------------

// A raw client that completed the handshake with an auto-accepting server.
int RawEstablished(const std::string& port, int sndbuf = 0, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (sndbuf > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(int));
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(int));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  FrameHeader h;
  h.type = tcp::kFrameHello;
  h.addr = tcp::kHelloMagic;
  h.value = tcp::kProtocolVersion;
  uint8_t b[kHeaderSize];
  tcp::EncodeHeader(h, b);
  if (send(fd, b, sizeof(b), MSG_NOSIGNAL) != kHeaderSize) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads HELLO_ACK and ACCEPT.
bool AwaitAccept(int fd) {
  uint8_t b[2 * kHeaderSize];
  size_t got = 0;
  while (got < sizeof(b)) {
    ssize_t n = recv(fd, b + got, sizeof(b) - got, 0);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return b[0] == tcp::kFrameHelloAck && b[kHeaderSize] == tcp::kFrameAccept;
}

// A server that accepts every request (QP without receives) and keeps the
// ids until Stop().
struct AutoServer {
  Side side;
  std::unique_ptr<CmChannel> lch;
  std::unique_ptr<Listener> listener;
  std::string port;
  std::vector<std::unique_ptr<CmId>> ids;
  std::atomic<int> accepted{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> running{false};
  std::thread thread;

  void Start() {
    side.Init();
    ASSERT_EQ(side.pd->CreateCmChannel(&lch), 0);
    ASSERT_EQ(ListenAny(side.pd.get(), lch.get(), &listener, &port), 0);
    thread = std::thread([this] {
      running = true;
      while (!stop) {
        CmEvent ev;
        if (!NextEvent(lch.get(), &ev, 100) || ev.new_id == nullptr) continue;
        QpInit init;
        init.send_cq = side.cq.get();
        init.recv_cq = side.cq.get();
        init.sq_size = 4;
        init.rq_size = 4;
        if (ev.new_id->CreateQp(init) != 0 ||
            ev.new_id->Migrate(side.ch.get()) != 0 ||
            ev.new_id->Accept(nullptr, 0) != 0) {
          continue;
        }
        ids.push_back(std::move(ev.new_id));
        ++accepted;
      }
    });
    // Running before a test takes descriptors away (the sanitizers' checks
    // at thread start need some).
    while (!running) std::this_thread::yield();
  }
  void Stop() {
    stop = true;
    if (thread.joinable()) thread.join();
    ids.clear();
  }
  ~AutoServer() { Stop(); }
};

void RaiseFdLimit(rlim_t want) {
  rlimit r;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
  if (r.rlim_cur >= want) return;
  if (r.rlim_max < want) GTEST_SKIP() << "fd hard limit " << r.rlim_max;
  r.rlim_cur = want;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &r), 0);
}

// Sends what the socket takes of [p, p+n) from *off on; false once the
// socket takes nothing more now.
bool SendSome(int fd, const uint8_t* p, size_t n, size_t* off) {
  while (*off < n) {
    ssize_t w = send(fd, p + *off, n - *off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w <= 0) return false;
    *off += static_cast<size_t>(w);
  }
  return true;
}

// Half of the peers block a SEND (no receive is ever posted) and push
// 4 KiB writes behind it; the other half flood zero-length writes and
// never read a response. None of them reads anything.
TEST_F(TcpLimitsTest, ThousandHostileConnectionsStayWithinTheBounds) {
  constexpr int kConns = 1000;
  ASSERT_NO_FATAL_FAILURE(RaiseFdLimit(4 * kConns + 256));
  tcp::MutableLimitsForTest()->max_stash_bytes = 256u << 10;
  tcp::MutableLimitsForTest()->stall_ms = 60000;      // not this test's bound
  tcp::MutableLimitsForTest()->rnr_retry_ms = 60000;  // nor this
  const tcp::Limits& l = tcp::GetLimits();
  AutoServer srv;
  ASSERT_NO_FATAL_FAILURE(srv.Start());
  int64_t rss0 = ResidentKiB();
  int64_t t_start = NowMs();

  std::vector<int> fds;
  for (int i = 0; i < kConns; ++i) {
    int fd = RawEstablished(srv.port, 32 << 10, 4 << 10);
    ASSERT_GE(fd, 0) << "connection " << i;
    fds.push_back(fd);
  }
  for (int i = 0; i < kConns; ++i) {
    ASSERT_TRUE(AwaitAccept(fds[i])) << "connection " << i;
  }
  int64_t t_connected = NowMs();
  // The streams: RNR peers 1 SEND + 72 writes of 4 KiB (288 KiB each,
  // more than the per-connection stash); flooders 8192 empty writes.
  std::vector<uint8_t> rnr, flood;
  auto put = [](std::vector<uint8_t>* v, const FrameHeader& h, size_t pay) {
    uint8_t b[kHeaderSize];
    tcp::EncodeHeader(h, b);
    v->insert(v->end(), b, b + kHeaderSize);
    v->insert(v->end(), pay, 0x5a);
  };
  FrameHeader s;
  s.type = tcp::kFrameSend;
  put(&rnr, s, 0);
  FrameHeader w;
  w.type = tcp::kFrameWrite;
  w.addr = 0x1000;
  w.length = 4096;
  for (int i = 0; i < 72; ++i) put(&rnr, w, 4096);
  w.length = 0;
  for (int i = 0; i < 8192; ++i) put(&flood, w, 0);
  std::vector<size_t> off(kConns, 0);
  // Until the target stops taking bytes (300 ms without progress).
  size_t last = 0;
  int64_t still_since = NowMs();
  while (NowMs() - still_since < 300 && NowMs() - t_connected < 10000) {
    size_t total = 0;
    for (int i = 0; i < kConns; ++i) {
      const std::vector<uint8_t>& v = (i % 2 == 0) ? rnr : flood;
      SendSome(fds[i], v.data(), v.size(), &off[i]);
      total += off[i];
    }
    if (total != last) still_since = NowMs();
    last = total;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int64_t t_sent = NowMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int64_t held = Held(srv.side.pd.get());
  int64_t rss1 = ResidentKiB();
  size_t sent = 0;
  for (size_t o : off) sent += o;
  std::printf(
      "[ figures ] %d hostile connections pushed %.1f MiB; target holds "
      "%.1f MiB for them (bound %.1f MiB); resident %lld -> %lld KiB "
      "(+%.1f MiB)\n",
      kConns, sent / 1048576.0, held / 1048576.0, l.peer_hold_bytes / 1048576.0,
      static_cast<long long>(rss0), static_cast<long long>(rss1),
      (rss1 - rss0) / 1024.0);
  std::printf("[ figures ] connect %lld ms, flood %lld ms\n",
              static_cast<long long>(t_connected - t_start),
              static_cast<long long>(t_sent - t_connected));
  EXPECT_GT(held, 0);
  // The Pd's bound, overshot by at most the response of one request per
  // connection (checked before each request, counted after).
  EXPECT_LE(held, static_cast<int64_t>(l.peer_hold_bytes) + kConns * 128);
  // The per-connection input buffers (64 KiB each) plus the Pd's bound,
  // with room for the connections' own bookkeeping.
  if (!kAsan) {
    EXPECT_LT(rss1 - rss0, kConns * 64 +
                               static_cast<int64_t>(l.peer_hold_bytes / 1024) +
                               64 * 1024);
  }

  // An honest client of the same Pd still gets its operations through.
  {
    Side c;
    ASSERT_NO_FATAL_FAILURE(c.Init());
    ASSERT_EQ(c.pd->CreateActiveId("127.0.0.1", srv.port.c_str(), 2000, &c.id),
              0);
    ASSERT_EQ(c.MakeQp(), 0);
    ASSERT_EQ(c.id->Migrate(c.ch.get()), 0);
    ASSERT_EQ(c.id->Connect(nullptr, 0), 0);
    CmEvent ev;
    ASSERT_TRUE(NextEvent(c.ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    std::vector<uint8_t> target(64, 0x11), local(64, 0);
    std::unique_ptr<Mr> tmr, lmr;
    ASSERT_EQ(srv.side.pd->RegMr(target.data(), 64, kAll, &tmr), 0);
    ASSERT_EQ(c.pd->RegMr(local.data(), 64, kAll, &lmr), 0);
    for (int i = 0; i < 20; ++i) {
      SendWr rd;
      rd.opcode = Opcode::kRead;
      rd.signaled = true;
      rd.sge = {local.data(), 64, lmr->lkey()};
      rd.remote_addr = reinterpret_cast<uint64_t>(target.data());
      rd.rkey = tmr->rkey();
      ASSERT_EQ(c.qp()->PostSend(rd), 0);
      auto wc = PollN(c.cq.get(), 1);
      ASSERT_EQ(wc.size(), 1u);
      ASSERT_EQ(wc[0].status, IBV_WC_SUCCESS);
    }
    EXPECT_EQ(local, target);
    c.id.reset();
  }

  // The peers go away. Those that filled their own stash sit behind a
  // zero window, so their close is not seen: the RNR budget ends them.
  tcp::MutableLimitsForTest()->rnr_retry_ms = 200;
  for (int fd : fds) close(fd);
  int64_t until = NowMs() + 15000;
  while (Held(srv.side.pd.get()) != 0 && NowMs() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(Held(srv.side.pd.get()), 0) << "after close";  // all given back
}

// A peer flooding READ requests without reading a response: the target
// queues at most Limits::max_out_responses responses for it (their data
// is sent from registered memory), then stops reading its requests.
TEST_F(TcpLimitsTest, FloodOfRequestsWithoutReadingIsBoundedInResponses) {
  tcp::MutableLimitsForTest()->max_out_responses = 64;
  tcp::MutableLimitsForTest()->stall_ms = 60000;
  AutoServer srv;
  ASSERT_NO_FATAL_FAILURE(srv.Start());
  std::vector<uint8_t> mem(1 << 20, 0x33);
  std::unique_ptr<Mr> mr;
  ASSERT_EQ(srv.side.pd->RegMr(mem.data(), mem.size(), kAll, &mr), 0);
  int fd = RawEstablished(srv.port, 16 << 10, 4 << 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(AwaitAccept(fd));
  std::vector<uint8_t> flood;
  FrameHeader rd;
  rd.type = tcp::kFrameRead;
  rd.addr = reinterpret_cast<uint64_t>(mem.data());
  rd.rkey = mr->rkey();
  rd.value = mem.size();
  uint8_t b[kHeaderSize];
  tcp::EncodeHeader(rd, b);
  for (int i = 0; i < 2000; ++i) flood.insert(flood.end(), b, b + sizeof(b));
  size_t off = 0;
  int64_t max_held = 0;
  int64_t end = NowMs() + 1000;
  while (NowMs() < end) {
    SendSome(fd, flood.data(), flood.size(), &off);
    max_held = std::max(max_held, Held(srv.side.pd.get()));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf(
      "[ figures ] flooder sent %zu READs of 1 MiB; at most %lld bytes "
      "held\n",
      off / kHeaderSize, static_cast<long long>(max_held));
  EXPECT_GT(max_held, 0);
  EXPECT_LE(max_held, 65 * 128);  // 64 responses (+1 checked before counted)
  close(fd);
}

// A peer that sends READ requests and never reads the data: its output
// backlog stalls and the connection is closed after Limits::stall_ms.
TEST_F(TcpLimitsTest, PeerThatStopsReadingIsClosedAfterTheStallTimeout) {
  AutoServer srv;
  ASSERT_NO_FATAL_FAILURE(srv.Start());
  std::vector<uint8_t> mem(1 << 20, 0x33);
  std::unique_ptr<Mr> mr;
  ASSERT_EQ(srv.side.pd->RegMr(mem.data(), mem.size(), kAll, &mr), 0);
  int fd = RawEstablished(srv.port, 0, 4 << 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(AwaitAccept(fd));
  CmEvent ev;
  ASSERT_TRUE(NextEvent(srv.side.ch.get(), &ev));
  ASSERT_EQ(ev.type, CmEventType::kEstablished);
  FrameHeader rd;
  rd.type = tcp::kFrameRead;
  rd.addr = reinterpret_cast<uint64_t>(mem.data());
  rd.rkey = mr->rkey();
  rd.value = mem.size();
  uint8_t b[kHeaderSize];
  tcp::EncodeHeader(rd, b);
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(send(fd, b, sizeof(b), MSG_NOSIGNAL), kHeaderSize);
  }
  int64_t t0 = NowMs();
  ASSERT_TRUE(NextEvent(srv.side.ch.get(), &ev, 5000));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_GE(NowMs() - t0, 250);
  EXPECT_EQ(Held(srv.side.pd.get()), 0);
  close(fd);
}

// accept() failing with EMFILE must not spin the engine; accepting resumes
// when descriptors are back.
TEST_F(TcpLimitsTest, AcceptFailingWithEmfileDoesNotSpin) {
  AutoServer srv;
  ASSERT_NO_FATAL_FAILURE(srv.Start());
  // One connection first, so that every engine path ran once before
  // descriptors are taken away (UBSan's first type check of a class needs
  // one).
  int warm = RawEstablished(srv.port);
  ASSERT_GE(warm, 0);
  ASSERT_TRUE(AwaitAccept(warm));
  close(warm);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  srv.accepted = 0;
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    clients.push_back(fd);
  }
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Use up every descriptor below a low limit.
  int top = dup(0);
  ASSERT_GE(top, 0);
  close(top);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(top) + 8;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = dup(0)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);

  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(srv.port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int fd : clients) {
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  }
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  getrusage(RUSAGE_SELF, &r1);
  auto us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000ll +
           r.ru_utime.tv_usec + r.ru_stime.tv_usec;
  };
  int64_t cpu_us = us(r1) - us(r0);
  for (int fd : filler) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  std::printf("[ figures ] CPU while accept() fails with EMFILE: %.1f%%\n",
              cpu_us / 5000.0);
  EXPECT_LT(cpu_us, 100000);  // under 20 % of a core (spinning: ~100 %)
  EXPECT_EQ(srv.accepted.load(), 0);

  // Descriptors are back: the pending connections are served.
  uint8_t b[kHeaderSize];
  FrameHeader h;
  h.type = tcp::kFrameHello;
  h.addr = tcp::kHelloMagic;
  h.value = tcp::kProtocolVersion;
  tcp::EncodeHeader(h, b);
  for (int fd : clients) {
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ASSERT_EQ(send(fd, b, sizeof(b), MSG_NOSIGNAL), kHeaderSize);
    EXPECT_TRUE(AwaitAccept(fd));
    close(fd);
  }
  int64_t until = NowMs() + 2000;
  while (srv.accepted.load() < 3 && NowMs() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(srv.accepted.load(), 3);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
