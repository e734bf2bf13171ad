// rpma_ext.h: every documented error of the three extensions (and that a
// request refused by rpma_conn_req_set_peer stays usable), the tcp rkeys'
// lack of structure, and the penalty for remote access errors.
#include <chrono>
#include <cstdlib>
#include <set>

#include "ext_fixture.h"

namespace {

using rpma::prov::tcp::AccessPenalty;
using rpma::prov::tcp::PenaltyPolicy;
using rpma_test::ExtFixture;
using rpma_test::kAddr;
using rpma_test::Pair;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST_F(ExtFixture, SetPeerNullArguments) {
  EXPECT_EQ(rpma_conn_req_set_peer(nullptr, ks_), RPMA_E_INVAL);
  struct rpma_conn* c = StartClient();
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_peer(req, nullptr), RPMA_E_INVAL);
  Pair p = Finish(c, req);  // still usable, still in the lobby
  EXPECT_EQ(Op(p, mr_a_, 0, true), IBV_WC_SUCCESS);
}

TEST_F(ExtFixture, SetPeerRefusesAnOutgoingRequest) {
  struct rpma_conn_req* creq = nullptr;
  ASSERT_EQ(rpma_conn_req_new(cli_, kAddr, port_.c_str(), nullptr, &creq), 0);
  EXPECT_EQ(rpma_conn_req_set_peer(creq, ks_), RPMA_E_INVAL);
  struct rpma_conn* c = nullptr;
  ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &c), 0);  // still usable
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  Finish(c, req);
}

TEST_F(ExtFixture, SetPeerRefusesAPeerOfAnotherDevice) {
  if (rpma_test::TestVerbsIp() != nullptr) GTEST_SKIP() << "tcp devices only";
  // Another capability set is another tcp device (one per address + caps).
  const char* old = std::getenv("RPMA_TCP_CAPS");
  std::string saved = old != nullptr ? old : "";
  setenv("RPMA_TCP_CAPS", "emulated,flush", 1);
  struct ibv_context* other_ctx = nullptr;
  ASSERT_EQ(rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL,
                                       &other_ctx),
            0);
  if (old != nullptr) {
    setenv("RPMA_TCP_CAPS", saved.c_str(), 1);
  } else {
    unsetenv("RPMA_TCP_CAPS");
  }
  ASSERT_NE(other_ctx, ctx_);
  struct rpma_peer* other = nullptr;
  ASSERT_EQ(rpma_peer_new(other_ctx, &other), 0);
  struct rpma_conn* c = StartClient();
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_peer(req, other), RPMA_E_INVAL);
  // Unchanged: it can still move to a peer of its device, and works there.
  EXPECT_EQ(rpma_conn_req_set_peer(req, ks_), 0);
  Pair p = Finish(c, req);
  EXPECT_EQ(Op(p, mr_b_, 0, true), IBV_WC_SUCCESS);
  EXPECT_EQ(rpma_peer_delete(&other), 0);
}

TEST_F(ExtFixture, SetPeerRefusesASharedRqAndKeepsTheRequest) {
  struct rpma_srq* srq = nullptr;
  ASSERT_EQ(rpma_srq_new(lobby_, nullptr, &srq), 0);
  struct rpma_conn_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
  ASSERT_EQ(rpma_conn_cfg_set_srq(cfg, srq), 0);
  struct rpma_conn* c = StartClient();
  struct rpma_conn_req* req = NextReq(cfg);
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_peer(req, ks_), RPMA_E_INVAL);
  Pair p = Finish(c, req);
  EXPECT_EQ(Op(p, mr_a_, 0, true), IBV_WC_SUCCESS);  // still in the lobby
  (void)rpma_conn_disconnect(pairs_[0].server);
  EXPECT_EQ(rpma_conn_delete(&pairs_[0].server), 0);
  EXPECT_EQ(rpma_srq_delete(&srq), 0);
  EXPECT_EQ(rpma_conn_cfg_delete(&cfg), 0);
}

TEST_F(ExtFixture, SetPeerRefusesAfterAReceiveWasPosted) {
  char rbuf[16];
  struct rpma_mr_local* rmr = nullptr;
  ASSERT_EQ(rpma_mr_reg(lobby_, rbuf, sizeof(rbuf), RPMA_MR_USAGE_RECV, &rmr),
            0);
  struct rpma_conn* c = StartClient();
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  ASSERT_EQ(rpma_conn_req_recv(req, rmr, 0, sizeof(rbuf), nullptr), 0);
  EXPECT_EQ(rpma_conn_req_set_peer(req, ks_), RPMA_E_INVAL);
  Pair p = Finish(c, req);
  EXPECT_EQ(Op(p, mr_a_, 0, true), IBV_WC_SUCCESS);
  (void)rpma_conn_disconnect(pairs_[0].server);
  EXPECT_EQ(rpma_conn_delete(&pairs_[0].server), 0);
  EXPECT_EQ(rpma_mr_dereg(&rmr), 0);
}

TEST_F(ExtFixture, SetPeerTwiceAndToTheSamePeer) {
  struct rpma_peer* third = nullptr;
  ASSERT_EQ(rpma_peer_new(ctx_, &third), 0);
  struct rpma_conn* c = StartClient();
  struct rpma_conn_req* req = NextReq();
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(rpma_conn_req_set_peer(req, lobby_), 0);  // where it is: no-op
  EXPECT_EQ(rpma_conn_req_set_peer(req, third), 0);
  EXPECT_EQ(rpma_conn_req_set_peer(req, ks_), 0);  // the last one counts
  Pair p = Finish(c, req);
  EXPECT_EQ(Op(p, mr_b_, 0, true), IBV_WC_SUCCESS);
  // Nothing of `third` is in use any more.
  EXPECT_EQ(rpma_peer_delete(&third), 0);
}

TEST_F(ExtFixture, ConnMrRegErrors) {
  SKIP_UNLESS_TCP();
  Pair p = Connect(ks_);
  ASSERT_NE(p.server, nullptr);
  char b[64];
  struct rpma_mr_local* mr = nullptr;
  EXPECT_EQ(rpma_conn_mr_reg(nullptr, b, 64, kRw, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_mr_reg(p.server, nullptr, 64, kRw, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_mr_reg(p.server, b, 0, kRw, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_mr_reg(p.server, b, 64, kRw, nullptr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_mr_reg(p.server, b, 64, 0, &mr), RPMA_E_INVAL);
  EXPECT_EQ(rpma_conn_mr_reg(p.server, b, 64, 1 << 8, &mr), RPMA_E_INVAL);
  EXPECT_EQ(mr, nullptr);
  ASSERT_EQ(rpma_conn_mr_reg(p.server, b, 64, kRw, &mr), 0);
  EXPECT_EQ(rpma_mr_dereg(&mr), 0);
  EXPECT_EQ(mr, nullptr);
}

TEST_F(ExtFixture, AdvanceErrors) {
  SKIP_UNLESS_TCP();
  EXPECT_EQ(rpma_mr_advance(nullptr, 0), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_advance(mr_b_, kBuf + 1), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_advance(mr_b_, 0), 0);
  EXPECT_EQ(rpma_mr_advance(mr_b_, 64), 0);
  EXPECT_EQ(rpma_mr_advance(mr_b_, 64), 0);  // not below: allowed
  EXPECT_EQ(rpma_mr_advance(mr_b_, 32), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_advance(mr_b_, 0), RPMA_E_INVAL);
  EXPECT_EQ(rpma_mr_advance(mr_b_, kBuf), 0);
  EXPECT_EQ(rpma_mr_advance(mr_b_, kBuf + 1), RPMA_E_INVAL);
  // The refused calls changed nothing: the floor is still the whole region.
  Pair p = Connect(ks_);
  ASSERT_NE(p.server, nullptr);
  EXPECT_EQ(Op(p, mr_b_, kBuf - 8, true), IBV_WC_REM_ACCESS_ERR);
}

// tcp rkeys: 32 random bits each. Across 1000 keys no bit is fixed, no two
// are equal, none is 0, and consecutive keys show no counter (low 16 bits
// one apart happens by chance with probability 1000/65536).
TEST_F(ExtFixture, RkeysHaveNoPredictableStructure) {
  if (rpma_test::TestVerbsIp() != nullptr) GTEST_SKIP() << "tcp rkeys";
  constexpr int kN = 1000;
  std::vector<char> mem(kN);
  std::vector<struct rpma_mr_local*> mrs(kN, nullptr);
  std::vector<uint32_t> keys;
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(rpma_mr_reg(ks_, &mem[i], 1, kRw, &mrs[i]), 0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(mrs[i], desc), 0);
    uint32_t k = 0;
    for (int b = 0; b < 4; ++b)
      k |= static_cast<uint32_t>(desc[16 + b]) << (8 * b);
    keys.push_back(k);
  }
  uint32_t all_and = ~0u, all_or = 0;
  int sequential_low = 0, sequential_high = 0;
  for (int i = 0; i < kN; ++i) {
    EXPECT_NE(keys[i], 0u);
    all_and &= keys[i];
    all_or |= keys[i];
    if (i > 0 && ((keys[i] - keys[i - 1]) & 0xffffu) == 1) ++sequential_low;
    if (i > 0 && ((keys[i] >> 16) - (keys[i - 1] >> 16)) == 1)
      ++sequential_high;
  }
  EXPECT_EQ(all_and, 0u) << "bits set in every key";
  EXPECT_EQ(all_or, ~0u) << "bits clear in every key";
  EXPECT_EQ(std::set<uint32_t>(keys.begin(), keys.end()).size(),
            static_cast<size_t>(kN));
  EXPECT_LT(sequential_low, 10);
  EXPECT_LT(sequential_high, 10);
  for (auto*& mr : mrs) ASSERT_EQ(rpma_mr_dereg(&mr), 0);
}

// A peer address that caused remote access errors waits before its next
// connection request reaches the listener: kBaseMs doubled per error.
// Lower bounds only (a loaded machine may be slower, never faster).
TEST_F(ExtFixture, AccessErrorsDelayTheNextConnectionRequests) {
  if (rpma_test::TestVerbsIp() != nullptr) GTEST_SKIP() << "tcp provider";
  AccessPenalty& pen = AccessPenalty::Global();
  const std::string ip = "127.0.0.1";
  EXPECT_EQ(pen.PenaltyMs(ip, NowMs()), 0);  // honest so far: no delay
  Pair honest = Connect(ks_);
  ASSERT_NE(honest.server, nullptr);
  EXPECT_EQ(Op(honest, mr_b_, 0, true), IBV_WC_SUCCESS);
  EXPECT_EQ(pen.errors(ip), 0u);  // successes count nothing
  for (int i = 0; i < 3; ++i) {
    Pair bad = Connect(ks_);  // each wrong guess costs the QP
    ASSERT_NE(bad.server, nullptr);
    EXPECT_EQ(Op(bad, mr_a_, 0, true), IBV_WC_REM_ACCESS_ERR);
  }
  // The target counts the error as it answers; the requester may see its
  // completion just before that.
  for (int i = 0; i < 100 && pen.errors(ip) < 3; ++i) usleep(10000);
  EXPECT_EQ(pen.errors(ip), 3u);
  const int64_t penalty = PenaltyPolicy::kBaseMs * 4;  // 3 errors
  EXPECT_EQ(pen.PenaltyMs(ip, NowMs()), penalty);
  // Two connects at once are delivered one penalty after the other.
  int64_t t0 = NowMs();
  struct rpma_conn* c1 = StartClient();
  struct rpma_conn* c2 = StartClient();
  struct rpma_conn_req* r1 = NextReq(nullptr, 10000);
  ASSERT_NE(r1, nullptr);
  int64_t t1 = NowMs();
  struct rpma_conn_req* r2 = NextReq(nullptr, 10000);
  ASSERT_NE(r2, nullptr);
  int64_t t2 = NowMs();
  EXPECT_GE(t1 - t0, penalty);
  EXPECT_GE(t2 - t0, 2 * penalty);
  Finish(c1, r1);
  Finish(c2, r2);
}

}  // namespace
