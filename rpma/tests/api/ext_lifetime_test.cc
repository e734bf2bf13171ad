// rpma_ext.h lifetime rules and thread cost: a moved request/connection
// keeps BOTH peers busy (the one it came from and the one it moved to),
// and keyspace peers that only hold registrations and moved connections
// start no progress-engine thread (tcp).
#include <dirent.h>

#include <cstdio>

#include "ext_fixture.h"
#include "peer.h"
#include "tcp/tcp_pd.h"

// Deleting a busy peer leaks its protection domain on purpose
// (rpma/README.md, "Choices of our own"); tell LeakSanitizer.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:rpma_peer_new\n";
}

namespace {

using rpma_test::ExtFixture;
using rpma_test::Pair;

int Threads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (struct dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST_F(ExtFixture, AMovedConnectionKeepsBothPeersBusy) {
  Pair p = Connect(ks_);
  ASSERT_NE(p.server, nullptr);
  // Deleting either peer now is refused (PD leaked, never destroyed under
  // the connection) ...
  ASSERT_EQ(rpma_ep_shutdown(&ep_), 0);
  ASSERT_EQ(rpma_mr_dereg(&mr_a_), 0);
  EXPECT_EQ(rpma_peer_delete(&lobby_), RPMA_E_PROVIDER);
  EXPECT_EQ(rpma_peer_delete(&ks_), RPMA_E_PROVIDER);
  // ... and the connection goes on working in the new peer's domain.
  EXPECT_EQ(Op(p, mr_b_, 0, true), IBV_WC_SUCCESS);
  EXPECT_TRUE(AllAre(buf_b_, 0, 8, 'c'));
}

TEST_F(ExtFixture, KeyspacePeersStartNoEngineThread) {
  if (rpma_test::TestVerbsIp() != nullptr) GTEST_SKIP() << "tcp engines";
  Pair warm = Connect(ks_);  // the lobby's and the client's engines run
  ASSERT_NE(warm.server, nullptr);
  const int before = Threads();
  constexpr int kPeers = 24;
  std::vector<struct rpma_peer*> peers(kPeers, nullptr);
  std::vector<struct rpma_mr_local*> mrs(kPeers, nullptr);
  std::vector<char> mem(kPeers * 64);
  for (int i = 0; i < kPeers; ++i) {
    ASSERT_EQ(rpma_peer_new(ctx_, &peers[i]), 0);
    ASSERT_EQ(rpma_mr_reg(peers[i], &mem[i * 64], 64, kRw, &mrs[i]), 0);
    Pair c = Connect(peers[i]);
    ASSERT_NE(c.server, nullptr);
    EXPECT_EQ(Op(c, mrs[i], 0, true), IBV_WC_SUCCESS);
  }
  const int after = Threads();
  std::printf(
      "threads: %d before, %d after %d keyspace peers with a moved "
      "connection each\n",
      before, after, kPeers);
  for (struct rpma_peer* peer : peers) {
    auto* pd = dynamic_cast<rpma::prov::tcp::TcpPd*>(peer->pd.get());
    ASSERT_NE(pd, nullptr);
    EXPECT_FALSE(pd->has_engine());
  }
  EXPECT_EQ(after, before);
  // Connections before their regions, regions before their peers.
  for (Pair& q : pairs_) {
    (void)rpma_conn_disconnect(q.client);
    EXPECT_EQ(rpma_conn_delete(&q.client), 0);
    (void)rpma_conn_disconnect(q.server);
    EXPECT_EQ(rpma_conn_delete(&q.server), 0);
  }
  for (int i = 0; i < kPeers; ++i) {
    EXPECT_EQ(rpma_mr_dereg(&mrs[i]), 0);
    EXPECT_EQ(rpma_peer_delete(&peers[i]), 0);
  }
}

}  // namespace
