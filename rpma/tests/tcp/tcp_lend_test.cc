// Lending (ProgressGroup::Lend / Reclaim, rpma_conn_group_set_busy): while
// the thread that serves a connection's socket is busy elsewhere, the
// engine thread serves the peer's one-sided requests on it; once reclaimed
// it does not (until the handover takes the socket back).
#include <fcntl.h>

#include <memory>

#include "tcp/tcp_cq.h"
#include "tcp_data_fixture.h"

namespace rpma::prov::tcp_test {
namespace {

using tcp::ProgressGroup;
using tcp::TcpCompletionChannel;

class TcpLendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    p_.Listen();
    ASSERT_EQ(p_.server.pd->CreateCompletionChannel(&ch_), 0);
    int fl = fcntl(ch_->fd(), F_GETFL);
    ASSERT_EQ(fcntl(ch_->fd(), F_SETFL, fl | O_NONBLOCK), 0);
    p_.server.cq.reset();
    ASSERT_EQ(p_.server.pd->CreateCq(64, ch_.get(), &p_.server.cq), 0);
    ASSERT_NO_FATAL_FAILURE(p_.StartClient(true));
    ASSERT_EQ(p_.client.id->Connect(nullptr, 0), 0);
    CmEvent req;
    ASSERT_TRUE(NextEvent(p_.listen_ch.get(), &req));
    p_.server.id = std::move(req.new_id);
    ASSERT_EQ(p_.server.MakeQp(), 0);
    ASSERT_EQ(p_.server.id->Migrate(p_.server.ch.get()), 0);
    ASSERT_EQ(p_.server.id->Accept(nullptr, 0), 0);
    CmEvent ev;
    ASSERT_TRUE(NextEvent(p_.client.ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    ASSERT_TRUE(NextEvent(p_.server.ch.get(), &ev));
    ASSERT_EQ(ev.type, CmEventType::kEstablished);
    ASSERT_EQ(p_.server.pd->RegMr(target_.data(), target_.size(), kAll, &tmr_),
              0);
    ASSERT_EQ(p_.client.pd->RegMr(local_.data(), local_.size(),
                                  kAccessLocalWrite, &lmr_),
              0);
    group_ = static_cast<TcpCompletionChannel*>(ch_.get())->group().get();
  }
  void TearDown() override {
    p_.client.id.reset();
    p_.server.id.reset();
    p_.server.cq.reset();
    tmr_.reset();
    lmr_.reset();
    ch_.reset();
  }

  // One READ of the server's region; `serve`: the server's thread makes
  // progress on its channel meanwhile (as a worker waiting on it does).
  bool Read(bool serve) {
    SendWr wr;
    wr.opcode = Opcode::kRead;
    wr.signaled = true;
    wr.sge = {local_.data(), 64, lmr_->lkey()};
    wr.remote_addr = reinterpret_cast<uint64_t>(target_.data());
    wr.rkey = tmr_->rkey();
    if (p_.client.qp()->PostSend(wr) != 0) return false;
    const int64_t end = NowMs() + 5000;
    while (NowMs() < end) {
      if (serve) {
        Cq* got = nullptr;
        (void)ch_->TryGetEvent(&got);
      }
      ibv_wc wc[1];
      if (p_.client.cq->Poll(1, wc) == 1) return wc[0].status == IBV_WC_SUCCESS;
    }
    return false;
  }

  // Reads served by the server's thread until it served the socket once:
  // the connection is delegated (the engine no longer watches it).
  void Delegate() {
    for (int i = 0; i < 200 && group_->app_serves() == 0; i++) {
      ASSERT_TRUE(Read(/*serve=*/true));
    }
    ASSERT_GT(group_->app_serves(), 0u);
  }

  Pair p_;
  std::unique_ptr<CompletionChannel> ch_;
  ProgressGroup* group_ = nullptr;
  std::vector<uint8_t> target_ = std::vector<uint8_t>(4096, 'T');
  std::vector<uint8_t> local_ = std::vector<uint8_t>(4096, 0);
  std::unique_ptr<Mr> tmr_, lmr_;
};

TEST_F(TcpLendTest, WhileLentTheEngineServesEveryReadAndAfterwardsNone) {
  ASSERT_NO_FATAL_FAILURE(Delegate());
  ch_->LendProgress(true);
  for (int i = 0; i < 20; i++) {
    ASSERT_TRUE(Read(/*serve=*/false)) << i;  // nobody else serves it
  }
  EXPECT_EQ(local_[0], 'T');
  const uint64_t lent = group_->lent_serves();
  EXPECT_GE(lent, 20u);  // each READ's frame, read by the engine
  ch_->LendProgress(false);
  // Reclaimed: the server's thread serves the socket again; the engine
  // does not (it is disarmed, whatever arrives).
  for (int i = 0; i < 5; i++) ASSERT_TRUE(Read(/*serve=*/true)) << i;
  EXPECT_EQ(group_->lent_serves(), lent);
}

TEST_F(TcpLendTest, LendingTwiceAndReclaimingTwiceAreHarmless) {
  ASSERT_NO_FATAL_FAILURE(Delegate());
  ch_->LendProgress(false);  // not lent: nothing
  ch_->LendProgress(true);
  ch_->LendProgress(true);
  ASSERT_TRUE(Read(/*serve=*/false));
  ch_->LendProgress(false);
  ch_->LendProgress(false);
  const uint64_t lent = group_->lent_serves();
  EXPECT_GE(lent, 1u);
  ASSERT_TRUE(Read(/*serve=*/true));
  EXPECT_EQ(group_->lent_serves(), lent);
}

TEST_F(TcpLendTest, AChannelDestroyedWhileLentLeavesTheEngineClean) {
  ASSERT_NO_FATAL_FAILURE(Delegate());
  ch_->LendProgress(true);
  ASSERT_TRUE(Read(/*serve=*/false));
  // The channel goes while lent (its group unregisters from the engine
  // before the Pd can go; ASan sees a use after free otherwise).
  p_.client.id.reset();
  p_.server.id.reset();
  p_.server.cq.reset();
  ch_.reset();
  group_ = nullptr;
}

}  // namespace
}  // namespace rpma::prov::tcp_test
