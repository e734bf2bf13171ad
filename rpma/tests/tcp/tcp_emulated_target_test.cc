// A tcp device without native flush / atomic write (RPMA_TCP_CAPS=emulated)
// refuses them as a target, the way a NIC without them does: the
// requester's WR completes with IBV_WC_REM_INV_REQ_ERR, its QP is in error
// (later WRs flush), the responder's QP fails too (its receives flush),
// and target memory is untouched. What the emulation posts instead (an
// 8-byte read, a fenced 8-byte write) is served as always.
#include <cstring>

#include "tcp_data_fixture.h"

namespace rpma::prov::tcp_test {
namespace {

DeviceCaps EmulatedCaps() {
  DeviceCaps c;
  EXPECT_EQ(tcp::ParseCaps("emulated", &c), 0);
  return c;
}

class TcpEmulatedTargetTest : public TcpDataTest {
 protected:
  void SetUp() override {
    p_.server.caps = EmulatedCaps();  // client stays native
    TcpDataTest::SetUp();
    ASSERT_FALSE(Dev(p_.server.caps)->caps().native_flush);
    std::memset(target_.data(), 0x5a, target_.size());
    // A receive on the server, to see its QP fail.
    RecvWr rv;
    rv.wr_id = 900;
    rv.sge = {recv_buf_, sizeof(recv_buf_), 0};
    ASSERT_EQ(p_.server.qp()->PostRecv(rv), 0);
  }

  // Posts `wr` then an ordinary write; expects the refusal, the flush of
  // the write, the server's receive flushed and target memory intact.
  void ExpectRefused(SendWr wr) {
    Qp* qp = p_.client.qp();
    const std::vector<uint8_t> before = target_;
    ASSERT_EQ(qp->PostSend(wr), 0);
    local_[0] = 1;
    ASSERT_EQ(qp->PostSend(Wr(Opcode::kWrite, 2, 0, 8)), 0);
    auto wc = PollN(p_.client.cq.get(), 2);
    ASSERT_EQ(wc.size(), 2u);
    EXPECT_EQ(wc[0].wr_id, 1u);
    EXPECT_EQ(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
    EXPECT_EQ(wc[1].wr_id, 2u);
    EXPECT_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
    auto rwc = PollN(p_.server.cq.get(), 1);
    ASSERT_EQ(rwc.size(), 1u);
    EXPECT_EQ(rwc[0].wr_id, 900u);
    EXPECT_EQ(rwc[0].status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(target_, before);
    // The requester's QP stays in error.
    ASSERT_EQ(qp->PostSend(Wr(Opcode::kRead, 3, 0, 8)), 0);
    wc = PollN(p_.client.cq.get(), 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
  }

  uint8_t recv_buf_[64] = {};

  SendWr FlushWr(FlushType type, uint64_t length) {
    SendWr fl = Wr(Opcode::kFlush, 1, 0, 0);
    fl.sge = {};
    fl.flush_type = type;
    fl.flush_length = length;
    return fl;
  }
};

TEST_F(TcpEmulatedTargetTest, NativeFlushIsRefusedAsAnInvalidRequest) {
  ExpectRefused(FlushWr(FlushType::kPersistent, 4096));
}

TEST_F(TcpEmulatedTargetTest, NativeVisibilityFlushIsRefusedToo) {
  ExpectRefused(FlushWr(FlushType::kVisibility, 64));
}

TEST_F(TcpEmulatedTargetTest, NativeAtomicWriteIsRefusedAndWritesNothing) {
  SendWr aw = Wr(Opcode::kAtomicWrite, 1, 8, 0);
  aw.sge = {};
  const uint8_t val[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::memcpy(aw.atomic_data, val, 8);
  ExpectRefused(aw);
}

TEST_F(TcpEmulatedTargetTest, TheEmulationsOpcodesAreServed) {
  Qp* qp = p_.client.qp();
  // librpma's atomic write without native support: a fenced inline
  // 8-byte write; its flush: an 8-byte read after the writes.
  SendWr w = Wr(Opcode::kWrite, 1, 8, 8);
  const uint8_t val[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::memcpy(local_.data(), val, 8);
  w.fence = true;
  w.inline_data = true;
  ASSERT_EQ(qp->PostSend(w), 0);
  ASSERT_EQ(qp->PostSend(Wr(Opcode::kRead, 2, 8, 8)), 0);
  auto wc = PollN(p_.client.cq.get(), 2);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(target_.data() + 8, val, 8), 0);
  EXPECT_EQ(PollFor(p_.server.cq.get(), 20), 0);  // server receive intact
}

}  // namespace
}  // namespace rpma::prov::tcp_test
