// rpma_ext.h: the isolation properties. A connection moved into a peer
// reaches that peer's regions only; a connection of the listener's peer
// cannot reach another peer's; a per-connection region is reachable only
// through its connection; below a region's floor nothing is reachable.
// Every denied access uses the region's REAL rkey and address and must
// complete with IBV_WC_REM_ACCESS_ERR, leaving the bytes unchanged.
#include "ext_fixture.h"

namespace {

using rpma_test::ExtFixture;
using rpma_test::Pair;

TEST_F(ExtFixture, MovedQpCannotReadOrWriteTheListenersPeer) {
  Pair w = Connect(ks_);
  ASSERT_NE(w.server, nullptr);
  EXPECT_EQ(Op(w, mr_a_, 0, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_a_, 0, kBuf, 'A'));
  Pair r = Connect(ks_);
  ASSERT_NE(r.server, nullptr);
  EXPECT_EQ(Op(r, mr_a_, 0, false), IBV_WC_REM_ACCESS_ERR);
  // The new peer's regions are what it reaches.
  Pair ok = Connect(ks_);
  ASSERT_NE(ok.server, nullptr);
  EXPECT_EQ(Op(ok, mr_b_, 16, true), IBV_WC_SUCCESS);
  EXPECT_TRUE(AllAre(buf_b_, 16, 8, 'c'));
  EXPECT_EQ(Op(ok, mr_b_, 0, false), IBV_WC_SUCCESS);
}

TEST_F(ExtFixture, ListenersQpCannotTouchAnotherPeersRegions) {
  Pair w = Connect(nullptr);
  ASSERT_NE(w.server, nullptr);
  EXPECT_EQ(Op(w, mr_b_, 0, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_b_, 0, kBuf, 'B'));
  Pair r = Connect(nullptr);
  ASSERT_NE(r.server, nullptr);
  EXPECT_EQ(Op(r, mr_b_, 0, false), IBV_WC_REM_ACCESS_ERR);
  Pair ok = Connect(nullptr);
  ASSERT_NE(ok.server, nullptr);
  EXPECT_EQ(Op(ok, mr_a_, 8, true), IBV_WC_SUCCESS);
  EXPECT_TRUE(AllAre(buf_a_, 8, 8, 'c'));
}

TEST_F(ExtFixture, ConnRegionIsReachableOnlyThroughItsConnection) {
  SKIP_UNLESS_TCP();
  Pair mine = Connect(ks_);
  Pair other = Connect(ks_);  // same peer, same device
  ASSERT_NE(mine.server, nullptr);
  ASSERT_NE(other.server, nullptr);
  buf_c_.assign(kBuf, 'C');
  ASSERT_EQ(rpma_conn_mr_reg(mine.server, buf_c_.data(), kBuf, kRw, &mr_c_), 0);
  EXPECT_EQ(Op(other, mr_c_, 0, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_c_, 0, kBuf, 'C'));
  Pair reader = Connect(ks_);
  ASSERT_NE(reader.server, nullptr);
  EXPECT_EQ(Op(reader, mr_c_, 0, false), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(Op(mine, mr_c_, 32, true), IBV_WC_SUCCESS);
  EXPECT_TRUE(AllAre(buf_c_, 32, 8, 'c'));
  EXPECT_EQ(Op(mine, mr_c_, 0, false), IBV_WC_SUCCESS);
}

TEST_F(ExtFixture, ConnRegionOfAListenerConnection) {
  SKIP_UNLESS_TCP();
  // Not moved: the region is in the listener's peer, still one QP only.
  Pair mine = Connect(nullptr);
  Pair other = Connect(nullptr);
  ASSERT_NE(mine.server, nullptr);
  ASSERT_NE(other.server, nullptr);
  buf_c_.assign(kBuf, 'C');
  ASSERT_EQ(rpma_conn_mr_reg(mine.server, buf_c_.data(), kBuf, kRw, &mr_c_), 0);
  EXPECT_EQ(Op(other, mr_c_, 0, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_c_, 0, kBuf, 'C'));
  EXPECT_EQ(Op(mine, mr_c_, 0, true), IBV_WC_SUCCESS);
}

TEST_F(ExtFixture, NothingBelowTheFloorIsReachable) {
  SKIP_UNLESS_TCP();
  ASSERT_EQ(rpma_mr_advance(mr_b_, 64), 0);
  Pair below = Connect(ks_);
  ASSERT_NE(below.server, nullptr);
  EXPECT_EQ(Op(below, mr_b_, 0, true), IBV_WC_REM_ACCESS_ERR);
  Pair straddle = Connect(ks_);  // [60, 68): starts below the floor
  ASSERT_NE(straddle.server, nullptr);
  EXPECT_EQ(Op(straddle, mr_b_, 60, true), IBV_WC_REM_ACCESS_ERR);
  Pair rd = Connect(ks_);
  ASSERT_NE(rd.server, nullptr);
  EXPECT_EQ(Op(rd, mr_b_, 56, false), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_b_, 0, kBuf, 'B'));
  Pair above = Connect(ks_);
  ASSERT_NE(above.server, nullptr);
  EXPECT_EQ(Op(above, mr_b_, 64, true), IBV_WC_SUCCESS);
  EXPECT_TRUE(AllAre(buf_b_, 64, 8, 'c'));
  EXPECT_TRUE(AllAre(buf_b_, 0, 64, 'B'));
  EXPECT_EQ(Op(above, mr_b_, 64, false), IBV_WC_SUCCESS);
  // Raised again on a live connection: it takes effect at once.
  ASSERT_EQ(rpma_mr_advance(mr_b_, 128), 0);
  EXPECT_EQ(Op(above, mr_b_, 64, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_b_, 72, kBuf - 72, 'B'));
  // The whole region.
  ASSERT_EQ(rpma_mr_advance(mr_b_, kBuf), 0);
  Pair end = Connect(ks_);
  ASSERT_NE(end.server, nullptr);
  EXPECT_EQ(Op(end, mr_b_, kBuf - 8, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_b_, kBuf - 8, 8, 'B'));
}

TEST_F(ExtFixture, ConnRegionOutlivesItsConnectionUnreachable) {
  SKIP_UNLESS_TCP();
  Pair mine = Connect(ks_);
  ASSERT_NE(mine.server, nullptr);
  buf_c_.assign(kBuf, 'C');
  ASSERT_EQ(rpma_conn_mr_reg(mine.server, buf_c_.data(), kBuf, kRw, &mr_c_), 0);
  // Deleting the connection first is allowed; the region stays usable
  // locally (descriptor, size) and deregisters cleanly (TearDown), and the
  // peers then delete with no object left.
  ASSERT_EQ(rpma_conn_disconnect(pairs_[0].server), 0);
  ASSERT_EQ(rpma_conn_delete(&pairs_[0].server), 0);
  size_t size = 0;
  EXPECT_EQ(rpma_mr_get_size(mr_c_, &size), 0);
  EXPECT_EQ(size, kBuf);
  Pair other = Connect(ks_);
  ASSERT_NE(other.server, nullptr);
  EXPECT_EQ(Op(other, mr_c_, 0, true), IBV_WC_REM_ACCESS_ERR);
  EXPECT_TRUE(AllAre(buf_c_, 0, kBuf, 'C'));
}

}  // namespace
