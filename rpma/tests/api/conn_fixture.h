// The connected-pair-with-buffers fixture shared by the conn and data-path
// tests.
#ifndef RPMA_TESTS_API_CONN_FIXTURE_H_
#define RPMA_TESTS_API_CONN_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "api_test_util.h"
#include "librpma.h"

namespace rpma_test {

// A connected pair plus registered buffers on both ends: the server
// exposes `remote_` (read/write/flush-able), the client owns `local_`.
class ConnTest : public ConnPairFixture {
 protected:
  void SetUp() override {
    ConnPairFixture::SetUp();
    if (HasFatalFailure()) return;
    server_buf_.assign(4096, 0);
    client_buf_.assign(4096, 0);
    ASSERT_EQ(rpma_mr_reg(peer_, server_buf_.data(), server_buf_.size(),
                          RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_WRITE_DST |
                              RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
                              RPMA_MR_USAGE_RECV,
                          &server_mr_),
              0);
    ASSERT_EQ(rpma_mr_reg(peer_, client_buf_.data(), client_buf_.size(),
                          RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC |
                              RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV,
                          &local_),
              0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(server_mr_, desc), 0);
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &remote_), 0);
  }
  void TearDown() override {
    rpma_mr_remote_delete(&remote_);
    CloseConns();  // connections before their regions, regions before peer
    rpma_mr_dereg(&local_);
    rpma_mr_dereg(&server_mr_);
    ConnPairFixture::TearDown();
  }
  // Bounded wait for one completion on cq.
  int WaitWc(struct rpma_cq* cq, struct ibv_wc* wc) {
    for (int i = 0; i < 500; i++) {
      int rc = rpma_cq_get_wc(cq, 1, wc, nullptr);
      if (rc != RPMA_E_NO_COMPLETION) return rc;
      usleep(10000);
    }
    return RPMA_E_NO_COMPLETION;
  }
  std::vector<char> server_buf_, client_buf_;
  struct rpma_mr_local* server_mr_ = nullptr;
  struct rpma_mr_local* local_ = nullptr;
  struct rpma_mr_remote* remote_ = nullptr;
};
}  // namespace rpma_test

#endif  // RPMA_TESTS_API_CONN_FIXTURE_H_
