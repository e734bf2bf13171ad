// Helpers of the tcp provider tests: ports, event/completion waits, and a
// connected client/server pair on 127.0.0.1.
#ifndef RPMA_TESTS_TCP_TCP_TEST_UTIL_H_
#define RPMA_TESTS_TCP_TCP_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "provider/provider.h"
#include "tcp/tcp_device.h"

namespace rpma::prov::tcp_test {

// A fresh port in 20000-29999 derived from the pid (tests of one binary
// run in one process; ctest runs each test in its own process).
inline std::string NextPort() {
  static int n = 0;
  int p = 20000 + static_cast<int>((getpid() * 37 + n++ * 101) % 10000);
  return std::to_string(p);
}

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits up to timeout_ms for the fd to become readable.
inline bool WaitReadable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

// Next CM event within timeout_ms; false on timeout.
inline bool NextEvent(CmChannel* ch, CmEvent* ev, int timeout_ms = 5000) {
  if (!WaitReadable(ch->fd(), timeout_ms)) return false;
  return ch->GetEvent(ev) == 0;
}

// Next completion event of a channel whose fd is O_NONBLOCK, within
// timeout_ms; the GetEvent result (-EAGAIN on timeout). A readable channel
// fd does not promise an event (docs/tcp_provider.md, "Progress"): the
// engine thread may be completing the bytes that woke the poll, so the
// wait is repeated until the event is there.
inline int NextCqEvent(CompletionChannel* ch, Cq** got, int timeout_ms) {
  const int64_t end = NowMs() + timeout_ms;
  int rc = -EAGAIN;
  while (rc == -EAGAIN) {
    const int64_t left = end - NowMs();
    if (left < 0) break;
    if (!WaitReadable(ch->fd(), static_cast<int>(left))) continue;
    rc = ch->GetEvent(got);
    // Readable, but the engine thread holds the bytes: let it finish.
    if (rc == -EAGAIN)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return rc;
}

// Polls until n completions arrived (or timeout_ms passed).
inline std::vector<ibv_wc> PollN(Cq* cq, int n, int timeout_ms = 5000) {
  std::vector<ibv_wc> out;
  int64_t end = NowMs() + timeout_ms;
  while (static_cast<int>(out.size()) < n && NowMs() < end) {
    ibv_wc wc[16];
    int got = cq->Poll(16, wc);
    if (got <= 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    out.insert(out.end(), wc, wc + got);
  }
  return out;
}

// Asserts nothing arrives within ms.
inline int PollFor(Cq* cq, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  ibv_wc wc[16];
  return cq->Poll(16, wc);
}

// Listens on 127.0.0.1 on a free port of the pid-derived sequence (another
// suite on this machine may hold one); *port is the one in use.
inline int ListenAny(Pd* pd, CmChannel* ch, std::unique_ptr<Listener>* out,
                     std::string* port) {
  int rc = -EADDRINUSE;
  for (int i = 0; i < 20 && rc == -EADDRINUSE; ++i) {
    *port = NextPort();
    rc = pd->Listen("127.0.0.1", port->c_str(), ch, out);
  }
  return rc;
}

// The tcp device for 127.0.0.1 with the given capabilities (default: all
// native, whatever RPMA_TCP_CAPS says: these suites post native flushes and
// atomic writes and need a target that serves them).
inline DeviceCaps NativeCaps() {
  DeviceCaps c;
  c.native_flush = c.native_atomic_write = true;
  return c;
}
inline Device* Dev(const DeviceCaps& caps = NativeCaps()) {
  Device* d = nullptr;
  EXPECT_EQ(tcp::GetDeviceWithCaps("127.0.0.1", true, caps, &d), 0);
  return d;
}

// One side of a connection: Pd, CM channel, CQ, and a QP on its id.
struct Side {
  std::unique_ptr<Pd> pd;
  std::unique_ptr<CmChannel> ch;
  std::unique_ptr<Cq> cq;
  std::unique_ptr<Cq> rcq;  // may alias cq (null = use cq)
  std::unique_ptr<CmId> id;

  DeviceCaps caps = NativeCaps();  // of this side's device

  void Init() {
    ASSERT_EQ(Dev(caps)->AllocPd(&pd), 0);
    ASSERT_EQ(pd->CreateCmChannel(&ch), 0);
    ASSERT_EQ(pd->CreateCq(64, nullptr, &cq), 0);
  }
  Cq* recv_cq() { return rcq ? rcq.get() : cq.get(); }
  int MakeQp(uint32_t sq = 16, uint32_t rq = 16, Srq* srq = nullptr) {
    QpInit init;
    init.send_cq = cq.get();
    init.recv_cq = recv_cq();
    init.srq = srq;
    init.sq_size = sq;
    init.rq_size = rq;
    return id->CreateQp(init);
  }
  Qp* qp() { return id->qp(); }
  // Tear-down order of the interface: ids (QPs) before CQs/channels/Pd.
  ~Side() {
    id.reset();
    rcq.reset();
    cq.reset();
    ch.reset();
    pd.reset();
  }
};

// A server (listener) and client side connected on 127.0.0.1.
struct Pair {
  Side server, client;
  std::unique_ptr<CmChannel> listen_ch;
  std::unique_ptr<Listener> listener;
  std::string port;

  void Listen() {
    server.Init();
    ASSERT_EQ(server.pd->CreateCmChannel(&listen_ch), 0);
    ASSERT_EQ(ListenAny(server.pd.get(), listen_ch.get(), &listener, &port), 0);
  }

  // The client's id towards the listener (after Listen), optionally with a
  // QP, migrated to the client's channel; nothing sent yet.
  void StartClient(bool with_qp, uint32_t sq = 16, uint32_t rq = 16) {
    client.Init();
    ASSERT_EQ(
        client.pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &client.id),
        0);
    if (with_qp) {
      ASSERT_EQ(client.MakeQp(sq, rq), 0);
    }
    ASSERT_EQ(client.id->Migrate(client.ch.get()), 0);
  }

  // Full handshake; QPs created on both sides before accept/connect.
  void Connect(uint32_t sq = 16, uint32_t rq = 16, Srq* server_srq = nullptr) {
    Listen();
    ASSERT_NO_FATAL_FAILURE(StartClient(true, sq, rq));
    ASSERT_EQ(client.id->Connect(nullptr, 0), 0);
    CmEvent req;
    ASSERT_TRUE(NextEvent(listen_ch.get(), &req));
    ASSERT_EQ(req.type, CmEventType::kConnectRequest);
    server.id = std::move(req.new_id);
    ASSERT_EQ(server.MakeQp(sq, rq, server_srq), 0);
    ASSERT_EQ(server.id->Migrate(server.ch.get()), 0);
    ASSERT_EQ(server.id->Accept(nullptr, 0), 0);
    CmEvent ev;
    ASSERT_TRUE(NextEvent(client.ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    ASSERT_TRUE(NextEvent(server.ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
  }

  ~Pair() {
    client.id.reset();
    server.id.reset();
    listener.reset();
    listen_ch.reset();
  }
};

}  // namespace rpma::prov::tcp_test

#endif  // RPMA_TESTS_TCP_TCP_TEST_UTIL_H_
