// Shared fixture of the tcp provider's data-path suites: a connected
// client/server pair with one registered region on each side.
#ifndef RPMA_TESTS_TCP_TCP_DATA_FIXTURE_H_
#define RPMA_TESTS_TCP_TCP_DATA_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "tcp_test_util.h"

namespace rpma::prov::tcp_test {

inline constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite |
                            kAccessRemoteRead | kAccessFlushVisibility |
                            kAccessFlushPersistent;

class TcpDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    p_.Connect();
    ASSERT_EQ(p_.server.pd->RegMr(target_.data(), target_.size(), kAll, &tmr_),
              0);
    ASSERT_EQ(p_.client.pd->RegMr(local_.data(), local_.size(),
                                  kAccessLocalWrite, &lmr_),
              0);
  }
  void TearDown() override {
    tmr_.reset();
    lmr_.reset();
  }

  SendWr Wr(Opcode op, uint64_t wr_id, size_t off, uint32_t len) {
    SendWr wr;
    wr.opcode = op;
    wr.wr_id = wr_id;
    wr.signaled = true;
    wr.sge = {local_.data(), len, lmr_->lkey()};
    wr.remote_addr = reinterpret_cast<uint64_t>(target_.data()) + off;
    wr.rkey = tmr_->rkey();
    return wr;
  }

  Pair p_;
  std::vector<uint8_t> target_ = std::vector<uint8_t>(8192, 0);
  std::vector<uint8_t> local_ = std::vector<uint8_t>(8192, 0);
  std::unique_ptr<Mr> tmr_, lmr_;
};

}  // namespace rpma::prov::tcp_test

#endif  // RPMA_TESTS_TCP_TCP_DATA_FIXTURE_H_
