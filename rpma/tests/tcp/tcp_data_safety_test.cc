// Data path of the tcp provider, continued: SRQ routing, channels, deep
// queues, many threads, and buffer safety around deregistration and
// flushed work requests.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tcp_data_fixture.h"

namespace rpma::prov::tcp_test {
namespace {

TEST(TcpSrqTest, OneSrqServesSeveralQpsWithTheirQpNums) {
  constexpr int kClients = 3;
  Side server;
  server.Init();
  std::unique_ptr<CmChannel> lch;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Srq> srq;
  ASSERT_EQ(server.pd->CreateCmChannel(&lch), 0);
  ASSERT_EQ(server.pd->CreateSrq(16, &srq), 0);
  std::string port;
  ASSERT_EQ(ListenAny(server.pd.get(), lch.get(), &listener, &port), 0);
  std::vector<std::unique_ptr<Side>> clients;
  std::vector<std::unique_ptr<CmId>> sids;
  for (int i = 0; i < kClients; ++i) {
    auto c = std::make_unique<Side>();
    c->Init();
    ASSERT_EQ(c->pd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &c->id),
              0);
    ASSERT_EQ(c->MakeQp(), 0);
    ASSERT_EQ(c->id->Migrate(c->ch.get()), 0);
    ASSERT_EQ(c->id->Connect(nullptr, 0), 0);
    CmEvent req;
    ASSERT_TRUE(NextEvent(lch.get(), &req));
    ASSERT_EQ(req.type, CmEventType::kConnectRequest);
    ASSERT_EQ(req.new_id->Migrate(server.ch.get()), 0);
    QpInit init;
    init.send_cq = server.cq.get();
    init.recv_cq = server.cq.get();
    init.srq = srq.get();
    ASSERT_EQ(req.new_id->CreateQp(init), 0);
    RecvWr bad;
    EXPECT_EQ(req.new_id->qp()->PostRecv(bad), -EINVAL);  // use the SRQ
    ASSERT_EQ(req.new_id->Accept(nullptr, 0), 0);
    CmEvent ev;
    ASSERT_TRUE(NextEvent(c->ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    sids.push_back(std::move(req.new_id));
    clients.push_back(std::move(c));
  }
  std::vector<uint8_t> bufs(kClients * 16, 0);
  for (int i = 0; i < kClients; ++i) {
    RecvWr rv;
    rv.wr_id = 100 + i;
    rv.sge = {bufs.data() + 16 * i, 16, 0};
    ASSERT_EQ(srq->PostRecv(rv), 0);
  }
  for (int i = kClients - 1; i >= 0; --i) {
    uint8_t msg = static_cast<uint8_t>(i + 1);
    SendWr s;
    s.opcode = Opcode::kSend;
    s.inline_data = true;
    s.sge = {&msg, 1, 0};
    ASSERT_EQ(clients[i]->qp()->PostSend(s), 0);
    auto rw = PollN(server.cq.get(), 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].qp_num, sids[i]->qp()->qp_num());
    EXPECT_EQ(rw[0].byte_len, 1u);
    EXPECT_EQ(bufs[16 * (rw[0].wr_id - 100)], msg);
  }
  sids.clear();
  clients.clear();
  listener.reset();
  lch.reset();
  srq.reset();
}

TEST_F(TcpDataTest, CompletionChannelFiresOnceWhenArmed) {
  Side& c = p_.client;
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(c.pd->CreateCompletionChannel(&ch), 0);
  std::unique_ptr<Cq> cq;
  ASSERT_EQ(c.pd->CreateCq(8, ch.get(), &cq), 0);
  int fl = fcntl(ch->fd(), F_GETFL);
  ASSERT_EQ(fcntl(ch->fd(), F_SETFL, fl | O_NONBLOCK), 0);
  Cq* got = nullptr;
  EXPECT_EQ(ch->GetEvent(&got), -EAGAIN);
  // A fresh connection whose send CQ is the channel's CQ.
  Pair p;
  p.Listen();
  p.client.Init();
  ASSERT_EQ(p.client.pd->CreateCq(8, ch.get(), &p.client.rcq), 0);
  ASSERT_EQ(p.client.pd->CreateActiveId("127.0.0.1", p.port.c_str(), 2000,
                                        &p.client.id),
            0);
  QpInit init;
  init.send_cq = p.client.rcq.get();
  init.recv_cq = p.client.rcq.get();
  ASSERT_EQ(p.client.id->CreateQp(init), 0);
  ASSERT_EQ(p.client.id->Migrate(p.client.ch.get()), 0);
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  ASSERT_EQ(p.client.rcq->RequestNotify(), 0);
  SendWr z;
  z.opcode = Opcode::kRead;
  z.signaled = true;
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  ASSERT_EQ(NextCqEvent(ch.get(), &got, 2000), 0);
  EXPECT_EQ(got, p.client.rcq.get());
  EXPECT_EQ(PollN(p.client.rcq.get(), 2).size(), 2u);
  EXPECT_EQ(ch->GetEvent(&got), -EAGAIN);  // armed once, fired once
  cq.reset();
  p.client.id.reset();
  p.server.id.reset();
  p.client.rcq.reset();
  ch.reset();
}

TEST_F(TcpDataTest, DeepQueuesCompleteInOrderWithTheirData) {
  // More than the immediate-send threshold in flight: later posts ride on
  // the engine's batched writes.
  Pair p;
  p.Connect(/*sq=*/128, /*rq=*/4);
  std::unique_ptr<Mr> tmr, lmr;
  for (size_t i = 0; i < target_.size(); ++i)
    target_[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(p.server.pd->RegMr(target_.data(), target_.size(), kAll, &tmr), 0);
  ASSERT_EQ(p.client.pd->RegMr(local_.data(), local_.size(), kAll, &lmr), 0);
  std::fill(local_.begin(), local_.end(), 0);
  uint64_t next = 0, done = 0;
  auto post = [&](uint64_t i) {
    SendWr w;
    w.opcode = Opcode::kRead;
    w.wr_id = i;
    w.signaled = true;
    size_t slot = i % 128;
    w.sge = {local_.data() + slot * 64, 64, lmr->lkey()};
    w.remote_addr = reinterpret_cast<uint64_t>(target_.data()) + slot * 64;
    w.rkey = tmr->rkey();
    return p.client.qp()->PostSend(w);
  };
  for (; next < 100; ++next) ASSERT_EQ(post(next), 0);
  int64_t end = NowMs() + 10000;
  while (done < 5000 && NowMs() < end) {
    ibv_wc wc[32];
    int n = p.client.cq->Poll(32, wc);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(wc[i].status, IBV_WC_SUCCESS);
      ASSERT_EQ(wc[i].wr_id, done);  // RC: completions in posting order
      ++done;
      if (next < 5000) {
        ASSERT_EQ(post(next++), 0);
      }
    }
  }
  EXPECT_EQ(done, 5000u);
  EXPECT_EQ(std::memcmp(local_.data(), target_.data(), 128 * 64), 0);
}

TEST(TcpMtTest, ManyConnectionsOfOnePeerFromManyThreads) {
  constexpr int kThreads = 4;
  Side server;
  server.Init();
  std::unique_ptr<CmChannel> lch;
  std::unique_ptr<Listener> listener;
  ASSERT_EQ(server.pd->CreateCmChannel(&lch), 0);
  std::string port;
  ASSERT_EQ(ListenAny(server.pd.get(), lch.get(), &listener, &port), 0);
  std::vector<uint8_t> target(kThreads * 4096, 0);
  std::unique_ptr<Mr> tmr;
  ASSERT_EQ(server.pd->RegMr(target.data(), target.size(), kAll, &tmr), 0);
  // The server accepts everything from its own thread.
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<CmId>> sids;
  std::unique_ptr<Cq> scq;
  ASSERT_EQ(server.pd->CreateCq(256, nullptr, &scq), 0);
  std::thread acceptor([&] {
    while (!stop) {
      CmEvent req;
      if (!NextEvent(lch.get(), &req, 100)) continue;
      if (req.type != CmEventType::kConnectRequest) continue;
      QpInit init;
      init.send_cq = scq.get();
      init.recv_cq = scq.get();
      if (req.new_id->CreateQp(init) == 0 &&
          req.new_id->Migrate(server.ch.get()) == 0 &&
          req.new_id->Accept(nullptr, 0) == 0) {
        sids.push_back(std::move(req.new_id));
      }
    }
  });
  // One client Pd (one peer), a connection per thread.
  std::unique_ptr<Pd> cpd;
  ASSERT_EQ(Dev()->AllocPd(&cpd), 0);
  std::atomic<int> ok{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::unique_ptr<CmChannel> ch;
      std::unique_ptr<Cq> cq;
      std::unique_ptr<CmId> id;
      std::vector<uint8_t> buf(4096, static_cast<uint8_t>(t + 1));
      std::unique_ptr<Mr> mr;
      if (cpd->CreateCmChannel(&ch) || cpd->CreateCq(64, nullptr, &cq) ||
          cpd->RegMr(buf.data(), buf.size(), kAll, &mr) ||
          cpd->CreateActiveId("127.0.0.1", port.c_str(), 2000, &id)) {
        return;
      }
      QpInit init;
      init.send_cq = cq.get();
      init.recv_cq = cq.get();
      CmEvent ev;
      if (id->CreateQp(init) || id->Migrate(ch.get()) ||
          id->Connect(nullptr, 0) || !NextEvent(ch.get(), &ev) ||
          ev.type != CmEventType::kEstablished) {
        return;
      }
      int good = 0;
      for (int i = 0; i < 200; ++i) {
        SendWr w;
        w.opcode = (i % 2) ? Opcode::kRead : Opcode::kWrite;
        w.signaled = true;
        w.sge = {buf.data(), 4096, mr->lkey()};
        w.remote_addr = reinterpret_cast<uint64_t>(target.data()) + t * 4096;
        w.rkey = tmr->rkey();
        if (id->qp()->PostSend(w) != 0) break;
        auto wc = PollN(cq.get(), 1);
        if (wc.size() == 1 && wc[0].status == IBV_WC_SUCCESS) ++good;
      }
      if (good == 200 &&
          buf == std::vector<uint8_t>(4096, static_cast<uint8_t>(t + 1))) {
        ++ok;
      }
      id.reset();
      mr.reset();
    });
  }
  for (auto& t : ts) t.join();
  stop = true;
  acceptor.join();
  EXPECT_EQ(ok.load(), kThreads);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(target[t * 4096 + 4095], t + 1);
  }
  sids.clear();
  cpd.reset();
  tmr.reset();
  scq.reset();
  listener.reset();
  lch.reset();
}

TEST_F(TcpDataTest, DeregistrationDuringRemoteReadsIsSafe) {
  // Reads stream while the target deregisters: each completes either
  // successfully or with an error/flush; the target never faults.
  constexpr size_t kLen = 4 << 20;
  void* big = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(big, MAP_FAILED);
  std::memset(big, 0x5c, kLen);
  std::vector<uint8_t> dst(kLen);
  std::unique_ptr<Mr> bmr, dmr;
  ASSERT_EQ(p_.server.pd->RegMr(big, kLen, kAll, &bmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(dst.data(), dst.size(), kAll, &dmr), 0);
  SendWr w;
  w.opcode = Opcode::kRead;
  w.signaled = true;
  w.sge = {dst.data(), static_cast<uint32_t>(dst.size()), dmr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(big);
  w.rkey = bmr->rkey();
  for (int i = 0; i < 8; ++i) {
    w.wr_id = i;
    ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  bmr.reset();
  // Unmapped: any access by the engine after deregistration would fault.
  ASSERT_EQ(munmap(big, kLen), 0);
  auto wc = PollN(p_.client.cq.get(), 8, 10000);
  EXPECT_EQ(wc.size(), 8u);
}

TEST_F(TcpDataTest, BlockingCompletionEventWakesUp) {
  std::unique_ptr<CompletionChannel> ch;
  ASSERT_EQ(p_.client.pd->CreateCompletionChannel(&ch), 0);
  std::unique_ptr<Cq> rcq;
  ASSERT_EQ(p_.client.pd->CreateCq(8, ch.get(), &rcq), 0);
  ASSERT_EQ(rcq->RequestNotify(), 0);
  // Push a completion into rcq through a QP of a fresh connection.
  Pair p;
  p.Listen();
  p.client.Init();
  ASSERT_EQ(p.client.pd->CreateActiveId("127.0.0.1", p.port.c_str(), 2000,
                                        &p.client.id),
            0);
  QpInit init;
  init.send_cq = rcq.get();
  init.recv_cq = rcq.get();
  ASSERT_EQ(p.client.id->CreateQp(init), 0);
  ASSERT_EQ(p.client.id->Migrate(p.client.ch.get()), 0);
  ASSERT_EQ(p.client.id->Connect(nullptr, 0), 0);
  CmEvent req;
  ASSERT_TRUE(NextEvent(p.listen_ch.get(), &req));
  p.server.id = std::move(req.new_id);
  ASSERT_EQ(p.server.MakeQp(), 0);
  ASSERT_EQ(p.server.id->Accept(nullptr, 0), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p.client.ch.get(), &ev));
  Cq* got = nullptr;
  int rc = -1;
  std::thread waiter([&] { rc = ch->GetEvent(&got); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  SendWr z;
  z.opcode = Opcode::kRead;
  z.signaled = true;
  ASSERT_EQ(p.client.id->qp()->PostSend(z), 0);
  waiter.join();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(got, rcq.get());
  rcq->AckEvents(1);
  EXPECT_EQ(PollN(rcq.get(), 1).size(), 1u);
  p.client.id.reset();
  p.server.id.reset();
  rcq.reset();
  ch.reset();
}

TEST_F(TcpDataTest, DeregistrationDuringRemoteWritesIsSafe) {
  // Large writes arrive in many pieces; the region goes away (and is
  // unmapped) in between: the rest of a payload is discarded, never
  // placed, and the write fails with a remote access error.
  constexpr size_t kLen = 4 << 20;
  void* tgt = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(tgt, MAP_FAILED);
  std::vector<uint8_t> src(kLen, 0x7e);
  std::unique_ptr<Mr> tmr, smr;
  ASSERT_EQ(p_.server.pd->RegMr(tgt, kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(src.data(), src.size(), kAll, &smr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.signaled = true;
  w.sge = {src.data(), static_cast<uint32_t>(kLen), smr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(tgt);
  w.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) {
    w.wr_id = i;
    ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  }
  // Deregister as soon as the first bytes have landed (not after a fixed
  // sleep: on a loaded VM a 2 ms sleep lasted long enough for all 32 MiB).
  const volatile uint8_t* first = static_cast<const uint8_t*>(tgt);
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (*first != 0x7e && std::chrono::steady_clock::now() < give_up) {
  }
  tmr.reset();
  ASSERT_EQ(munmap(tgt, kLen), 0);
  auto wc = PollN(p_.client.cq.get(), 8, 10000);
  ASSERT_EQ(wc.size(), 8u);
  bool failed = false;
  for (auto& c : wc) failed |= c.status != IBV_WC_SUCCESS;
  EXPECT_TRUE(failed);  // 32 MiB cannot all land between the first byte
                        // and the deregistration
}

TEST_F(TcpDataTest, FlushedWritesNoLongerUseTheirBuffers) {
  // Writes still queued when Disconnect() flushes them: once their
  // completions are out, the buffer is the application's (ASan would
  // catch a later send from it).
  constexpr size_t kLen = 4 << 20;
  auto src = std::make_unique<std::vector<uint8_t>>(kLen, 0x11);
  std::vector<uint8_t> tgt(kLen);
  std::unique_ptr<Mr> tmr, smr;
  ASSERT_EQ(p_.server.pd->RegMr(tgt.data(), kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(src->data(), kLen, kAll, &smr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.signaled = true;
  w.sge = {src->data(), static_cast<uint32_t>(kLen), smr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(tgt.data());
  w.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(p_.client.qp()->PostSend(w), 0);
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  auto wc = PollN(p_.client.cq.get(), 8);
  ASSERT_EQ(wc.size(), 8u);
  // RC order: some writes may have completed before the disconnect (a
  // spinning engine moves 32 MiB fast), every one after the first flushed
  // one is flushed too.
  bool flushed = false;
  for (const ibv_wc& c : wc) {
    if (flushed) EXPECT_EQ(c.status, IBV_WC_WR_FLUSH_ERR);
    if (c.status != IBV_WC_SUCCESS) {
      EXPECT_EQ(c.status, IBV_WC_WR_FLUSH_ERR);
      flushed = true;
    }
  }
  smr.reset();
  src.reset();
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p_.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST_F(TcpDataTest, FlushedReadsStopFillingTheirBuffers) {
  // Large reads in flight when Disconnect() flushes them: after the
  // completions the destination is unmapped; a late placement would fault.
  constexpr size_t kLen = 4 << 20;
  std::vector<uint8_t> src(kLen, 0x22);
  void* dst = mmap(nullptr, kLen, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(dst, MAP_FAILED);
  std::unique_ptr<Mr> tmr, dmr;
  ASSERT_EQ(p_.server.pd->RegMr(src.data(), kLen, kAll, &tmr), 0);
  ASSERT_EQ(p_.client.pd->RegMr(dst, kLen, kAll, &dmr), 0);
  SendWr r;
  r.opcode = Opcode::kRead;
  r.signaled = true;
  r.sge = {dst, static_cast<uint32_t>(kLen), dmr->lkey()};
  r.remote_addr = reinterpret_cast<uint64_t>(src.data());
  r.rkey = tmr->rkey();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(p_.client.qp()->PostSend(r), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  auto wc = PollN(p_.client.cq.get(), 8);
  ASSERT_EQ(wc.size(), 8u);
  dmr.reset();
  ASSERT_EQ(munmap(dst, kLen), 0);
  CmEvent ev;
  ASSERT_TRUE(NextEvent(p_.client.ch.get(), &ev));
  EXPECT_EQ(ev.type, CmEventType::kDisconnected);
}

TEST_F(TcpDataTest, PostSendAfterDisconnectFlushes) {
  ASSERT_EQ(p_.client.id->Disconnect(), 0);
  ASSERT_EQ(p_.client.qp()->PostSend(Wr(Opcode::kWrite, 5, 0, 8)), 0);
  auto wc = PollN(p_.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
}

}  // namespace
}  // namespace rpma::prov::tcp_test
