// Connection management of the tcp provider over real sockets on
// 127.0.0.1: handshake, private data, reject, disconnect, failures.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cstring>
#include <thread>

#include "provider/device_registry.h"
#include "tcp/tcp_device.h"
#include "tcp_test_util.h"

namespace rpma::prov::tcp_test {
namespace {

std::vector<uint8_t> Bytes(const char* s) {
  return std::vector<uint8_t>(s, s + std::strlen(s));
}

// A raw listening socket on 127.0.0.1:port.
int RawListen(const std::string& port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(TcpDeviceTest, SyntheticDevicePerAddress) {
  Device* a = nullptr;
  Device* b = nullptr;
  ASSERT_EQ(TcpGetDevice("127.0.0.1", true, &a), 0);
  ASSERT_EQ(TcpGetDevice("127.0.0.1", false, &b), 0);
  EXPECT_EQ(a, b);
  EXPECT_STREQ(a->provider_name(), "tcp");
  EXPECT_EQ(std::strncmp(a->context()->device->name, "rpma_tcp", 8), 0);
  EXPECT_EQ(DeviceFromContext(a->context()), a);
  EXPECT_TRUE(a->caps().native_flush);
  EXPECT_TRUE(a->caps().native_atomic_write);
  EXPECT_FALSE(a->caps().odp);
  Device* c = nullptr;
  EXPECT_EQ(TcpGetDevice("no.such.host.invalid", true, &c), -EINVAL);
  EXPECT_EQ(c, nullptr);
}

TEST(TcpCmTest, ConnectAcceptCarriesPrivateDataBothWays) {
  Pair p;
  p.Listen();
  ASSERT_NO_FATAL_FAILURE(p.StartClient(true));
  auto hello = Bytes("client-hello");
  ASSERT_EQ(p.client.id->Connect(hello.data(), hello.size()), 0);

  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  ASSERT_EQ(req.type, CmEventType::kConnectRequest);
  ASSERT_NE(req.new_id, nullptr);
  EXPECT_EQ(req.id, req.new_id.get());
  EXPECT_EQ(req.private_data, hello);
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Migrate(p.server.ch.get()), 0);
  std::vector<uint8_t> reply(kMaxAcceptPrivateData, 0x5a);  // the maximum
  ASSERT_EQ(p.server.id->Accept(reply.data(), kMaxAcceptPrivateData), 0);

  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(ev.id, p.client.id.get());
  EXPECT_EQ(ev.private_data, reply);
  ASSERT_TRUE(NextEvent(p.server.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(ev.id, p.server.id.get());
}

TEST(TcpCmTest, NothingOnTheWireBeforeConnect) {
  std::string port;
  int raw = -1;
  for (int i = 0; i < 20 && raw < 0; ++i) raw = RawListen(port = NextPort());
  ASSERT_GE(raw, 0);
  Side c;
  c.Init();
  ASSERT_EQ(c.pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &c.id), 0);
  ASSERT_EQ(c.MakeQp(), 0);
  ASSERT_EQ(c.id->Migrate(c.ch.get()), 0);
  // No TCP connection attempt at all: the backlog stays empty.
  EXPECT_FALSE(WaitReadable(raw, 300));
  ASSERT_EQ(c.id->Connect(nullptr, 0), 0);
  EXPECT_TRUE(WaitReadable(raw, 2000));
  close(raw);
}

TEST(TcpCmTest, RejectIsSeenByClient) {
  Pair p;
  p.Listen();
  ASSERT_NO_FATAL_FAILURE(p.StartClient(false));
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  ASSERT_EQ(req.new_id->Reject(), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kRejected);
}

TEST(TcpCmTest, DestroyingAnUnacceptedRequestRejects) {
  Pair p;
  p.Listen();
  ASSERT_NO_FATAL_FAILURE(p.StartClient(false));
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  req.new_id.reset();
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kRejected);
}

TEST(TcpCmTest, DisconnectReachesBothSides) {
  Pair p;
  p.Connect();
  ASSERT_EQ(p.client.id->Disconnect(), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.server.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_EQ(p.server.id->Disconnect(), 0);  // completes teardown
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_EQ(p.client.id->Disconnect(), 0);
}

TEST(TcpCmTest, DestroyingAnIdDisconnectsThePeerAndDoesNotBlock) {
  Pair p;
  p.Connect();
  int64_t t0 = NowMs();
  p.client.id.reset();
  EXPECT_LT(NowMs() - t0, 500);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.server.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST(TcpCmTest, ClosedPortIsRejected) {
  Side c;
  c.Init();
  std::string port = NextPort();
  ASSERT_EQ(c.pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &c.id), 0);
  ASSERT_EQ(c.id->Migrate(c.ch.get()), 0);
  ASSERT_EQ(c.id->Connect(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(c.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kRejected);
}

TEST(TcpCmTest, SilentPeerTimesOutAsUnreachable) {
  std::string port;
  int raw = -1;
  for (int i = 0; i < 20 && raw < 0; ++i) raw = RawListen(port = NextPort());
  ASSERT_GE(raw, 0);
  Side c;
  c.Init();
  ASSERT_EQ(c.pd->CreateActiveId("127.0.0.1", port.c_str(), 300, &c.id), 0);
  ASSERT_EQ(c.id->Migrate(c.ch.get()), 0);
  int64_t t0 = NowMs();
  ASSERT_EQ(c.id->Connect(nullptr, 0), 0);
  int conn = accept(raw, nullptr, nullptr);  // accepts, never answers
  ASSERT_GE(conn, 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(c.ch.get(), &ev, 3000));
  EXPECT_EQ(ev.type, CmEventType::kUnreachable);
  int64_t took = NowMs() - t0;
  EXPECT_GE(took, 250);
  EXPECT_LT(took, 2000);
  close(conn);
  close(raw);
}

TEST(TcpCmTest, BlockingGetEventWakesUpOnAnEvent) {
  Side c;
  c.Init();
  std::string port = NextPort();
  ASSERT_EQ(c.pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &c.id), 0);
  ASSERT_EQ(c.id->Migrate(c.ch.get()), 0);
  CmEvent ev;
  int rc = -1;
  std::thread waiter([&] { rc = c.ch->GetEvent(&ev); });  // blocks
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(c.id->Connect(nullptr, 0), 0);  // nobody listens: kRejected
  waiter.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(ev.type, CmEventType::kRejected);
  EXPECT_EQ(ev.id, c.id.get());
}

TEST(TcpCmTest, NonBlockingChannelReportsNoData) {
  Side c;
  c.Init();
  int fl = fcntl(c.ch->fd(), F_GETFL);
  ASSERT_EQ(fcntl(c.ch->fd(), F_SETFL, fl | O_NONBLOCK), 0);
  CmEvent ev;
  EXPECT_EQ(c.ch->GetEvent(&ev), -ENODATA);
}

TEST(TcpCmTest, MigrateMovesQueuedEventsAndDestroyDropsThem) {
  Pair p;
  p.Listen();
  ASSERT_NO_FATAL_FAILURE(p.StartClient(false));
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  // Accept before migrating: kEstablished is queued on the listener's
  // channel and must move along.
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  ASSERT_TRUE(WaitReadable(p.listen_ch->fd(), 1000));
  ASSERT_EQ(p.server.id->Migrate(p.server.ch.get()), 0);
  EXPECT_FALSE(WaitReadable(p.listen_ch->fd(), 0));
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.server.ch.get(), &ev, 1000));
  EXPECT_EQ(ev.type, CmEventType::kEstablished);
  EXPECT_EQ(ev.id, p.server.id.get());

  // The client's kEstablished is queued; destroying the id drops it.
  ASSERT_TRUE(WaitReadable(p.client.ch->fd(), 1000));
  p.client.id.reset();
  EXPECT_FALSE(WaitReadable(p.client.ch->fd(), 0));
}

TEST(TcpCmTest, KilledPeerProcessIsNoticed) {
  std::string port;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: a server that accepts one connection and then just sleeps.
    close(ready[0]);
    Pair s;
    s.server.Init();
    std::unique_ptr<CmChannel> lch;
    std::unique_ptr<Listener> l;
    if (s.server.pd->CreateCmChannel(&lch) != 0 ||
        ListenAny(s.server.pd.get(), lch.get(), &l, &port) != 0) {
      _exit(2);
    }
    uint16_t pn = static_cast<uint16_t>(std::stoi(port));
    (void)!write(ready[1], &pn, sizeof(pn));
    CmEvent req;
    if (!NextEvent(lch.get(), &req, 10000)) _exit(3);
    s.server.id = std::move(req.new_id);
    if (s.server.MakeQp() != 0 || s.server.id->Accept(nullptr, 0) != 0) {
      _exit(4);
    }
    for (;;) pause();
  }
  close(ready[1]);
  uint16_t pn = 0;
  ASSERT_EQ(read(ready[0], &pn, sizeof(pn)), 2);
  port = std::to_string(pn);
  close(ready[0]);
  Side cl;
  cl.Init();
  ASSERT_EQ(cl.pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &cl.id), 0);
  ASSERT_EQ(cl.MakeQp(), 0);
  ASSERT_EQ(cl.id->Migrate(cl.ch.get()), 0);
  ASSERT_EQ(cl.id->Connect(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(cl.ch.get(), &ev));
  ASSERT_EQ(ev.type, CmEventType::kEstablished);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int64_t t0 = NowMs();
  ASSERT_TRUE(NextEvent(cl.ch.get(), &ev, 5000));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
  EXPECT_LT(NowMs() - t0, 5000);
  int st;
  waitpid(pid, &st, 0);
}

TEST(TcpCmTest, ListenOnBusyPortFails) {
  Pair p;
  p.Listen();
  std::unique_ptr<Listener> second;
  EXPECT_EQ(p.server.pd->Listen("127.0.0.1", p.port.c_str(), p.listen_ch.get(),
                                &second),
            -EADDRINUSE);
  EXPECT_EQ(second, nullptr);
}

}  // namespace
}  // namespace rpma::prov::tcp_test

namespace rpma::prov::tcp_test {
namespace {

// Every error the tcp provider documents, one check each.
TEST(TcpErrorsTest, ArgumentAndStateErrors) {
  Side s;
  s.Init();
  std::unique_ptr<Mr> mr;
  char buf[64];
  EXPECT_EQ(s.pd->RegMr(nullptr, 64, kAccessLocalWrite, &mr), -EINVAL);
  EXPECT_EQ(s.pd->RegMr(buf, 0, kAccessLocalWrite, &mr), -EINVAL);
  EXPECT_EQ(s.pd->RegMr(buf, 64, 1 << 20, &mr), -EINVAL);
  EXPECT_EQ(mr, nullptr);
  std::unique_ptr<Cq> cq;
  EXPECT_EQ(s.pd->CreateCq(0, nullptr, &cq), -EINVAL);
  EXPECT_EQ(cq, nullptr);
  std::unique_ptr<Srq> srq;
  EXPECT_EQ(s.pd->CreateSrq(0, &srq), -EINVAL);
  ASSERT_EQ(s.pd->CreateSrq(1, &srq), 0);
  RecvWr rv;
  EXPECT_EQ(srq->PostRecv(rv), 0);
  EXPECT_EQ(srq->PostRecv(rv), -ENOMEM);
  std::unique_ptr<Listener> l;
  EXPECT_EQ(s.pd->Listen("no.such.host.invalid", "1", s.ch.get(), &l), -EINVAL);
  EXPECT_EQ(s.pd->Listen("192.0.2.1", "20000", s.ch.get(), &l),
            -EADDRNOTAVAIL);  // not an address of this host
  std::unique_ptr<CmId> id;
  EXPECT_EQ(s.pd->CreateActiveId("no.such.host.invalid", "1", 100, &id),
            -EINVAL);
  EXPECT_EQ(id, nullptr);

  // State errors on an active id that is not connected.
  ASSERT_EQ(s.pd->CreateActiveId("127.0.0.1", NextPort().c_str(), 100, &s.id),
            0);
  QpInit bad;
  EXPECT_EQ(s.id->CreateQp(bad), -EINVAL);  // no CQs
  ASSERT_EQ(s.MakeQp(), 0);
  EXPECT_EQ(s.MakeQp(), -EINVAL);  // at most once
  SendWr w;
  w.opcode = Opcode::kSend;
  EXPECT_EQ(s.qp()->PostSend(w), -EINVAL);       // not established yet
  EXPECT_EQ(s.id->Accept(nullptr, 0), -EINVAL);  // active side
  EXPECT_EQ(s.id->Reject(), -EINVAL);
  EXPECT_EQ(s.id->Disconnect(), -EINVAL);         // never connected
  EXPECT_EQ(s.id->Connect(nullptr, 3), -EINVAL);  // len without data
  ASSERT_EQ(s.id->Migrate(s.ch.get()), 0);
  ASSERT_EQ(s.id->Connect(nullptr, 0), 0);
  EXPECT_EQ(s.id->Connect(nullptr, 0), -EINVAL);  // once
  srq.reset();
}

TEST(TcpErrorsTest, InlineDataIsBounded) {
  Pair p;
  p.Connect();
  std::vector<uint8_t> big(65, 1);
  SendWr w;
  w.opcode = Opcode::kSend;
  w.inline_data = true;
  w.sge = {big.data(), 65, 0};
  EXPECT_EQ(p.client.qp()->PostSend(w), -EINVAL);
  w.sge.length = 64;
  EXPECT_EQ(p.client.qp()->PostSend(w), 0);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
