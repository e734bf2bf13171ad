// Many connections of one peer used from many threads at once (librpma's
// thread-safety promise for the data path and completions).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api_test_util.h"
#include "librpma.h"

namespace {

using rpma_test::kAddr;
using rpma_test::NextEvent;
using rpma_test::Readable;

constexpr int kConns = 4;
constexpr int kRounds = 200;

class MtTest : public rpma_test::PeerFixture {};

TEST_F(MtTest, ThreadsWriteAndReadBackOnTheirOwnConnections) {
  std::string port = rpma_test::Port(11);
  struct rpma_ep* ep = nullptr;
  ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port.c_str(), &ep), 0);
  int ep_fd = -1;
  ASSERT_EQ(rpma_ep_get_fd(ep, &ep_fd), 0);

  // One target region, one slice per connection.
  std::vector<char> target(kConns * 64, 0);
  struct rpma_mr_local* target_mr = nullptr;
  ASSERT_EQ(
      rpma_mr_reg(peer_, target.data(), target.size(),
                  RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC, &target_mr),
      0);
  uint8_t desc[21];
  ASSERT_EQ(rpma_mr_get_descriptor(target_mr, desc), 0);

  // Connection setup is single-threaded (as librpma requires).
  struct rpma_conn* clients[kConns] = {};
  struct rpma_conn* servers[kConns] = {};
  for (int i = 0; i < kConns; i++) {
    struct rpma_conn_req* req = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port.c_str(), nullptr, &req), 0);
    ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &clients[i]), 0);
    ASSERT_TRUE(Readable(ep_fd, 5000));
    ASSERT_EQ(rpma_ep_next_conn_req(ep, nullptr, &req), 0);
    ASSERT_EQ(rpma_conn_req_connect(&req, nullptr, &servers[i]), 0);
    enum rpma_conn_event ev;
    ASSERT_EQ(NextEvent(clients[i], &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
    ASSERT_EQ(NextEvent(servers[i], &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  }

  std::vector<int> failures(kConns, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kConns; i++) {
    threads.emplace_back([&, i] {
      std::vector<char> buf(128, 0);
      struct rpma_mr_local* mr = nullptr;
      struct rpma_mr_remote* remote = nullptr;
      struct rpma_cq* cq = nullptr;
      if (rpma_mr_reg(peer_, buf.data(), buf.size(),
                      RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &mr) ||
          rpma_mr_remote_from_descriptor(desc, 21, &remote) ||
          rpma_conn_get_cq(clients[i], &cq)) {
        failures[i]++;
        return;
      }
      for (int r = 0; r < kRounds && failures[i] == 0; r++) {
        std::snprintf(buf.data(), 64, "conn %d round %d", i, r);
        if (rpma_write(clients[i], remote, i * 64, mr, 0, 64,
                       RPMA_F_COMPLETION_ON_ERROR, nullptr) ||
            rpma_read(clients[i], mr, 64, remote, i * 64, 64,
                      RPMA_F_COMPLETION_ALWAYS, nullptr)) {
          failures[i]++;
          break;
        }
        struct ibv_wc wc;
        int rc = RPMA_E_NO_COMPLETION;
        for (int k = 0; k < 5000 && rc == RPMA_E_NO_COMPLETION; k++) {
          rc = rpma_cq_get_wc(cq, 1, &wc, nullptr);
          if (rc == RPMA_E_NO_COMPLETION) usleep(200);
        }
        if (rc != 0 || wc.status != IBV_WC_SUCCESS ||
            std::strcmp(buf.data(), buf.data() + 64) != 0)
          failures[i]++;
      }
      rpma_mr_remote_delete(&remote);
      rpma_mr_dereg(&mr);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kConns; i++) EXPECT_EQ(failures[i], 0) << "conn " << i;

  for (int i = 0; i < kConns; i++) {
    EXPECT_EQ(rpma_conn_disconnect(clients[i]), 0);
    EXPECT_EQ(rpma_conn_delete(&clients[i]), 0);
    EXPECT_EQ(rpma_conn_delete(&servers[i]), 0);
  }
  EXPECT_EQ(rpma_ep_shutdown(&ep), 0);
  EXPECT_EQ(rpma_mr_dereg(&target_mr), 0);
}

}  // namespace
