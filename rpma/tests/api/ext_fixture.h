// Fixture of the rpma_ext.h tests: a server with a "lobby" peer (its
// listener's) and a keyspace peer, a client peer, and helpers that connect
// a client (optionally moving the server's request to a peer) and run one
// client WRITE or READ against a server region, returning the status.
#ifndef RPMA_TESTS_API_EXT_FIXTURE_H_
#define RPMA_TESTS_API_EXT_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.h"
#include "librpma.h"
#include "rpma_ext.h"
#include "tcp/access_penalty.h"

namespace rpma_test {

struct Pair {
  struct rpma_conn* client = nullptr;
  struct rpma_conn* server = nullptr;
};

class ExtFixture : public ::testing::Test {
 protected:
  static constexpr size_t kBuf = 4096;
  static constexpr int kRw = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC;

  void SetUp() override {
    UseTestProvider();
    // Earlier errors of this process must not slow these connects down.
    rpma::prov::tcp::AccessPenalty::Global().Clear();
    ASSERT_EQ(
        rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &ctx_),
        0);
    ASSERT_EQ(rpma_peer_new(ctx_, &lobby_), 0);
    ASSERT_EQ(rpma_peer_new(ctx_, &ks_), 0);
    ASSERT_EQ(rpma_peer_new(ctx_, &cli_), 0);
    for (int i = 0; i < 20 && ep_ == nullptr; ++i) {
      port_ = Port(7 + i);
      (void)rpma_ep_listen(lobby_, kAddr, port_.c_str(), &ep_);
    }
    ASSERT_NE(ep_, nullptr);
    buf_a_.assign(kBuf, 'A');
    buf_b_.assign(kBuf, 'B');
    cbuf_.assign(64, 'c');
    ASSERT_EQ(rpma_mr_reg(lobby_, buf_a_.data(), kBuf, kRw, &mr_a_), 0);
    ASSERT_EQ(rpma_mr_reg(ks_, buf_b_.data(), kBuf, kRw, &mr_b_), 0);
    ASSERT_EQ(
        rpma_mr_reg(cli_, cbuf_.data(), cbuf_.size(),
                    RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &cmr_),
        0);
  }

  void TearDown() override {
    for (Pair& p : pairs_) {
      if (p.client != nullptr) {
        (void)rpma_conn_disconnect(p.client);
        EXPECT_EQ(rpma_conn_delete(&p.client), 0);
      }
      if (p.server != nullptr) {
        (void)rpma_conn_disconnect(p.server);
        EXPECT_EQ(rpma_conn_delete(&p.server), 0);
      }
    }
    for (struct rpma_mr_local** mr : {&mr_a_, &mr_b_, &mr_c_, &cmr_}) {
      if (*mr != nullptr) EXPECT_EQ(rpma_mr_dereg(mr), 0);
    }
    if (ep_ != nullptr) EXPECT_EQ(rpma_ep_shutdown(&ep_), 0);
    // Every object was released: the peers delete cleanly.
    for (struct rpma_peer** p : {&cli_, &ks_, &lobby_}) {
      if (*p != nullptr) EXPECT_EQ(rpma_peer_delete(p), 0);
    }
  }

  // The next incoming request (bounded wait); null on timeout.
  struct rpma_conn_req* NextReq(const struct rpma_conn_cfg* cfg = nullptr,
                                int timeout_ms = 5000) {
    int fd = -1;
    if (rpma_ep_get_fd(ep_, &fd) != 0 || !Readable(fd, timeout_ms))
      return nullptr;
    struct rpma_conn_req* req = nullptr;
    if (rpma_ep_next_conn_req(ep_, cfg, &req) != 0) return nullptr;
    return req;
  }

  struct rpma_conn* StartClient() {
    struct rpma_conn_req* creq = nullptr;
    struct rpma_conn* c = nullptr;
    EXPECT_EQ(rpma_conn_req_new(cli_, kAddr, port_.c_str(), nullptr, &creq), 0);
    EXPECT_EQ(rpma_conn_req_connect(&creq, nullptr, &c), 0);
    return c;
  }

  // Accepts `req` (consumed) for `client` and waits for ESTABLISHED.
  Pair Finish(struct rpma_conn* client, struct rpma_conn_req* req) {
    Pair p;
    p.client = client;
    EXPECT_EQ(rpma_conn_req_connect(&req, nullptr, &p.server), 0);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    EXPECT_EQ(NextEvent(p.client, &ev), 0);
    EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
    if (p.server != nullptr) {
      EXPECT_EQ(NextEvent(p.server, &ev), 0);
      EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
    }
    pairs_.push_back(p);
    return p;
  }

  // A connected pair; the server's request is moved to `move_to` first
  // (null: stays in the listener's peer).
  Pair Connect(struct rpma_peer* move_to) {
    struct rpma_conn* c = StartClient();
    struct rpma_conn_req* req = NextReq();
    EXPECT_NE(req, nullptr) << "no connection request arrived";
    if (req == nullptr) return Pair{c, nullptr};
    if (move_to != nullptr) EXPECT_EQ(rpma_conn_req_set_peer(req, move_to), 0);
    return Finish(c, req);
  }

  // One client operation on [off, off + 8) of `target` (with its real
  // rkey and address); the completion's status, or -1 if none came.
  int Op(const Pair& p, struct rpma_mr_local* target, size_t off, bool write,
         size_t len = 8) {
    char desc[64];
    EXPECT_EQ(rpma_mr_get_descriptor(target, desc), 0);
    struct rpma_mr_remote* remote = nullptr;
    EXPECT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &remote), 0);
    const int f = RPMA_F_COMPLETION_ALWAYS;
    int rc = write ? rpma_write(p.client, remote, off, cmr_, 0, len, f, nullptr)
                   : rpma_read(p.client, cmr_, 0, remote, off, len, f, nullptr);
    rpma_mr_remote_delete(&remote);
    EXPECT_EQ(rc, 0);
    if (rc != 0) return -1;
    struct rpma_cq* cq = nullptr;
    EXPECT_EQ(rpma_conn_get_cq(p.client, &cq), 0);
    struct ibv_wc wc;
    for (int i = 0; i < 500; i++) {
      rc = rpma_cq_get_wc(cq, 1, &wc, nullptr);
      if (rc == 0) return wc.status;
      if (rc != RPMA_E_NO_COMPLETION) return -1;
      usleep(10000);
    }
    return -1;
  }

  static bool AllAre(const std::vector<char>& v, size_t from, size_t len,
                     char c) {
    for (size_t i = from; i < from + len; ++i)
      if (v[i] != c) return false;
    return true;
  }

  struct ibv_context* ctx_ = nullptr;
  struct rpma_peer* lobby_ = nullptr;  // the listener's peer (A)
  struct rpma_peer* ks_ = nullptr;     // a keyspace's peer (B)
  struct rpma_peer* cli_ = nullptr;    // the client's
  struct rpma_ep* ep_ = nullptr;
  std::string port_;
  std::vector<char> buf_a_, buf_b_, buf_c_, cbuf_;
  struct rpma_mr_local* mr_a_ = nullptr;  // lobby_'s
  struct rpma_mr_local* mr_b_ = nullptr;  // ks_'s
  struct rpma_mr_local* mr_c_ = nullptr;  // a test's own
  struct rpma_mr_local* cmr_ = nullptr;   // the client's source / sink
  std::vector<Pair> pairs_;
};

// The rpma_conn_mr_reg / rpma_mr_advance tests need them (tcp only).
#define SKIP_UNLESS_TCP()                                                 \
  if (::rpma_test::TestVerbsIp() != nullptr)                              \
  GTEST_SKIP() << "verbs: rpma_conn_mr_reg / rpma_mr_advance are NOSUPP " \
                  "(rpma_ext.h)"

}  // namespace rpma_test

#endif  // RPMA_TESTS_API_EXT_FIXTURE_H_
