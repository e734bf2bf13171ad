// Seam tests of the semantic layer over a recording, failure-injecting
// provider (fake_provider.h): the order of provider calls a real NIC
// depends on, the ordering rules verbs enforces and tcp forgives, what is
// posted for emulated flush / atomic write, and every documented
// RPMA_E_PROVIDER / RPMA_E_NOMEM path of the API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "api_test_util.h"
#include "fake_provider.h"
#include "librpma.h"
#include "rpma_ext.h"

namespace rpma_test {
namespace {

using rpma::prov::DeviceCaps;

DeviceCaps Emulated() { return DeviceCaps{}; }

class SeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseTcp();
    dev_ = FakeDevice::Create(kAddr, Caps());
    ASSERT_NE(dev_, nullptr);
    ASSERT_EQ(rpma_peer_new(dev_->context(), &peer_), 0);
    port_ = Port(7);
  }
  void TearDown() override {
    if (client_ != nullptr) rpma_conn_delete(&client_);
    if (server_ != nullptr) rpma_conn_delete(&server_);
    if (ep_ != nullptr) rpma_ep_shutdown(&ep_);
    if (peer_ != nullptr) EXPECT_EQ(rpma_peer_delete(&peer_), 0);
    EXPECT_TRUE(dev_->Matching("VIOLATION").empty())
        << dev_->Matching("VIOLATION")[0];
  }
  virtual DeviceCaps Caps() { return Emulated(); }

  // Listens, connects a client and takes the server's request.
  void Request(struct rpma_conn_req** sreq) {
    ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
    struct rpma_conn_req* creq = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), nullptr, &creq),
              0);
    ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client_), 0);
    int fd = -1;
    ASSERT_EQ(rpma_ep_get_fd(ep_, &fd), 0);
    ASSERT_TRUE(Readable(fd, 5000));
    ASSERT_EQ(rpma_ep_next_conn_req(ep_, nullptr, sreq), 0);
  }
  void Establish() {
    struct rpma_conn_req* sreq = nullptr;
    ASSERT_NO_FATAL_FAILURE(Request(&sreq));
    ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server_), 0);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(NextEvent(client_, &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
    ASSERT_EQ(NextEvent(server_, &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  }
  // buf registered with `usage` and its remote form: the client's
  // one-sided operations then target this process's own memory.
  void RegisterLoopback(std::vector<char>* buf, int usage,
                        struct rpma_mr_local** mr,
                        struct rpma_mr_remote** rmr) {
    ASSERT_EQ(rpma_mr_reg(peer_, buf->data(), buf->size(), usage, mr), 0);
    uint8_t desc[21];
    ASSERT_EQ(rpma_mr_get_descriptor(*mr, desc), 0);
    ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, rmr), 0);
  }
  // Takes n completions off the client's CQ (at most ~5 s), each a success.
  void ReapClientCompletions(int n) {
    struct rpma_cq* cq = nullptr;
    ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
    for (int got = 0, i = 0; got < n && i < 500; i++) {
      struct ibv_wc wc;
      if (rpma_cq_get_wc(cq, 1, &wc, nullptr) == 0) {
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        got++;
      } else {
        usleep(10000);
      }
    }
  }
  // Positions of the prefixes, each searched after the previous one; -1
  // where the order breaks.
  std::vector<int> InOrder(const std::vector<std::string>& prefixes) {
    std::vector<int> at;
    int from = 0;
    for (const auto& p : prefixes) {
      int i = from < 0 ? -1 : dev_->Find(p, from);
      at.push_back(i);
      from = i < 0 ? -1 : i + 1;
    }
    return at;
  }

  FakeDevice* dev_ = nullptr;
  struct rpma_peer* peer_ = nullptr;
  std::string port_;
  struct rpma_ep* ep_ = nullptr;
  struct rpma_conn* client_ = nullptr;
  struct rpma_conn* server_ = nullptr;
};

MATCHER(AllFound, "every step found, in order") {
  for (int i : arg)
    if (i < 0) return false;
  return true;
}

TEST_F(SeamTest, ActiveSideCreatesQpBeforeMigratingAndConnecting) {
  ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
  dev_->ClearLog();
  struct rpma_conn_req* creq = nullptr;
  ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), nullptr, &creq), 0);
  ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client_), 0);
  // Nothing reaches the wire before the QP exists and the id is on the
  // connection's own channel (rdma_connect on a synchronous id blocks).
  EXPECT_THAT(
      InOrder({"CreateActiveId", "CreateCq", "CreateQp", "CreateCmChannel",
               "Migrate", "RegMr access=0x1 len=8", "Connect"}),
      AllFound())
      << ::testing::PrintToString(dev_->log());
}

TEST_F(SeamTest, TeardownDestroysQpBeforeCqsAndChannelsBeforePd) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  dev_->ClearLog();
  ASSERT_EQ(rpma_conn_disconnect(client_), 0);
  ASSERT_EQ(rpma_conn_delete(&client_), 0);
  EXPECT_THAT(InOrder({"Disconnect", "~CmId", "~Mr", "~Cq",
                       "~CompletionChannel", "~CmChannel"}),
              AllFound())
      << ::testing::PrintToString(dev_->log());
  ASSERT_EQ(rpma_conn_delete(&server_), 0);
  ASSERT_EQ(rpma_ep_shutdown(&ep_), 0);
  ASSERT_EQ(rpma_peer_delete(&peer_), 0);
  std::vector<std::string> log = dev_->log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back(), "~Pd");
}

TEST_F(SeamTest, EndpointShutdownBeforeDeletingAPendingRequest) {
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_NO_FATAL_FAILURE(Request(&sreq));
  // librpma destroys the endpoint's event channel here while the request's
  // id is still on it; rdma_destroy_id() then touches freed memory.
  ASSERT_EQ(rpma_ep_shutdown(&ep_), 0);
  EXPECT_TRUE(dev_->Matching("~CmChannel").empty());
  ASSERT_EQ(rpma_conn_req_delete(&sreq), 0);
  EXPECT_TRUE(dev_->Matching("VIOLATION").empty());
  EXPECT_EQ(dev_->Matching("~CmChannel").size(), 1u);  // now, after the id
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(client_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_REJECTED);
}

TEST_F(SeamTest, EndpointShutdownBeforeAcceptingAPendingRequest) {
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_NO_FATAL_FAILURE(Request(&sreq));
  ASSERT_EQ(rpma_ep_shutdown(&ep_), 0);
  ASSERT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server_), 0);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(client_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
  ASSERT_EQ(NextEvent(server_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_ESTABLISHED);
  EXPECT_EQ(dev_->Matching("~CmChannel").size(), 1u);  // the ep's, migrated
}

TEST_F(SeamTest, EmulatedFlushIsAReadAndAtomicWriteAFencedInlineWrite) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  std::vector<char> buf(64);
  struct rpma_mr_local* mr = nullptr;
  struct rpma_mr_remote* rmr = nullptr;
  ASSERT_NO_FATAL_FAILURE(RegisterLoopback(
      &buf, RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY, &mr,
      &rmr));
  dev_->ClearLog();
  char word[8] = {};
  ASSERT_EQ(rpma_atomic_write(client_, rmr, 0, word, RPMA_F_COMPLETION_ALWAYS,
                              nullptr),
            0);
  ASSERT_EQ(rpma_flush(client_, rmr, 0, 8, RPMA_FLUSH_TYPE_VISIBILITY,
                       RPMA_F_COMPLETION_ALWAYS, nullptr),
            0);
  // op 1 = kWrite with signaled|fence|inline; op 0 = kRead, signaled.
  EXPECT_EQ(dev_->Matching("PostSend"),
            (std::vector<std::string>{"PostSend op=1 flags=7",
                                      "PostSend op=0 flags=1"}));
  ReapClientCompletions(2);
  rpma_mr_remote_delete(&rmr);
  rpma_mr_dereg(&mr);
}

// RPMA_EXT_F_MORE reaches the provider as SendWr::more (flags bit 8 in
// the fake's log), with the completion flags unchanged.
TEST_F(SeamTest, TheMoreFlagReachesTheProvider) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  std::vector<char> buf(64);
  struct rpma_mr_local* mr = nullptr;
  struct rpma_mr_remote* rmr = nullptr;
  ASSERT_NO_FATAL_FAILURE(RegisterLoopback(
      &buf, RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_READ_DST, &mr, &rmr));
  dev_->ClearLog();
  ASSERT_EQ(rpma_read(client_, mr, 0, rmr, 32, 8,
                      RPMA_F_COMPLETION_ALWAYS | RPMA_EXT_F_MORE, nullptr),
            0);
  ASSERT_EQ(rpma_read(client_, mr, 8, rmr, 40, 8,
                      RPMA_F_COMPLETION_ON_ERROR | RPMA_EXT_F_MORE, nullptr),
            0);
  ASSERT_EQ(
      rpma_read(client_, mr, 16, rmr, 48, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
      0);
  EXPECT_EQ(dev_->Matching("PostSend"),
            (std::vector<std::string>{"PostSend op=0 flags=9",
                                      "PostSend op=0 flags=8",
                                      "PostSend op=0 flags=1"}));
  ReapClientCompletions(2);  // the signaled two
  rpma_mr_remote_delete(&rmr);
  rpma_mr_dereg(&mr);
}

class NativeSeamTest : public SeamTest {
 protected:
  DeviceCaps Caps() override {
    DeviceCaps c;
    c.native_flush = c.native_atomic_write = true;
    return c;
  }
};

TEST_F(NativeSeamTest, NativeDevicePostsAtomicWriteAndFlushAndHasNoBuffer) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  EXPECT_TRUE(dev_->Matching("RegMr").empty());  // no APM landing buffer
  uint8_t desc[21] = {};
  desc[20] = RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY;
  struct rpma_mr_remote* rmr = nullptr;
  ASSERT_EQ(rpma_mr_remote_from_descriptor(desc, 21, &rmr), 0);
  char word[8] = {};
  // Posted to an rkey of 0: the completions are errors, the posts count.
  ASSERT_EQ(rpma_atomic_write(client_, rmr, 0, word, RPMA_F_COMPLETION_ON_ERROR,
                              nullptr),
            0);
  EXPECT_EQ(dev_->Matching("PostSend"),
            (std::vector<std::string>{"PostSend op=3 flags=0"}));
  rpma_mr_remote_delete(&rmr);
}

class IwarpSeamTest : public SeamTest {
 protected:
  DeviceCaps Caps() override {
    DeviceCaps c;
    c.iwarp = true;
    return c;
  }
};

TEST_F(IwarpSeamTest, FlushBufferGetsRemoteWriteOnIwarp) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  // Both connections' 8-byte landing buffers: LOCAL_WRITE | REMOTE_WRITE.
  EXPECT_EQ(dev_->Matching("RegMr access=0x3 len=8").size(), 2u)
      << ::testing::PrintToString(dev_->log());
}

// --- Failure injection: every provider failure the API documents --------

TEST_F(SeamTest, PeerNewMapsPdAllocationFailures) {
  struct rpma_peer* p = nullptr;
  dev_->Fail("AllocPd", -ENOMEM);
  EXPECT_EQ(rpma_peer_new(dev_->context(), &p), RPMA_E_NOMEM);
  dev_->Fail("AllocPd", -EIO);
  EXPECT_EQ(rpma_peer_new(dev_->context(), &p), RPMA_E_PROVIDER);
  EXPECT_EQ(p, nullptr);
}

std::vector<std::string>* g_logged = nullptr;
void Capture(enum rpma_log_level level, const char*, const int, const char*,
             const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (g_logged != nullptr && level == RPMA_LOG_LEVEL_ERROR)
    g_logged->push_back(buf);
}

// One rule for every provider failure: "<what> failed: <errno text>".
TEST_F(SeamTest, ProviderFailuresAreLoggedOneWay) {
  std::vector<std::string> logged;
  g_logged = &logged;
  ASSERT_EQ(rpma_log_set_function(Capture), 0);
  std::vector<char> buf(64);
  struct rpma_mr_local* mr = nullptr;
  dev_->Fail("RegMr", -EIO);
  EXPECT_EQ(
      rpma_mr_reg(peer_, buf.data(), buf.size(), RPMA_MR_USAGE_READ_SRC, &mr),
      RPMA_E_PROVIDER);
  dev_->Fail("Listen", -ENOMEM);
  EXPECT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), RPMA_E_NOMEM);
  ASSERT_EQ(rpma_log_set_function(RPMA_LOG_USE_DEFAULT_FUNCTION), 0);
  g_logged = nullptr;
  ASSERT_EQ(logged.size(), 2u);
  EXPECT_EQ(logged[0].rfind("registering 64 bytes at ", 0), 0u) << logged[0];
  EXPECT_NE(logged[0].find(" failed: Input/output error"), std::string::npos)
      << logged[0];
  EXPECT_EQ(logged[1], "listening on " + std::string(kAddr) + ":" + port_ +
                           " failed: Cannot allocate memory");
}

TEST_F(SeamTest, MrRegAndSrqNewMapProviderFailures) {
  std::vector<char> buf(64);
  struct rpma_mr_local* mr = nullptr;
  dev_->Fail("RegMr", -EIO);
  EXPECT_EQ(
      rpma_mr_reg(peer_, buf.data(), buf.size(), RPMA_MR_USAGE_READ_SRC, &mr),
      RPMA_E_PROVIDER);
  EXPECT_EQ(mr, nullptr);
  struct rpma_srq* srq = nullptr;
  for (const char* op :
       {"CreateSrq", "CreateCompletionChannel", "CreateCq", "RequestNotify"}) {
    dev_->Fail(op, -EIO);
    EXPECT_EQ(rpma_srq_new(peer_, nullptr, &srq), RPMA_E_PROVIDER) << op;
    EXPECT_EQ(srq, nullptr) << op;
  }
  ASSERT_EQ(rpma_srq_new(peer_, nullptr, &srq), 0);  // nothing left behind
  dev_->Fail("SrqPostRecv", -ENOMEM);
  EXPECT_EQ(rpma_srq_recv(srq, nullptr, 0, 0, nullptr), RPMA_E_PROVIDER);
  EXPECT_EQ(rpma_srq_delete(&srq), 0);
}

TEST_F(SeamTest, EpListenMapsProviderFailures) {
  struct rpma_ep* ep = nullptr;
  dev_->Fail("CreateCmChannel", -EIO);
  EXPECT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep), RPMA_E_PROVIDER);
  dev_->Fail("Listen", -EADDRINUSE);
  EXPECT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep), RPMA_E_PROVIDER);
  dev_->Fail("Listen", -ENOMEM);
  EXPECT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep), RPMA_E_NOMEM);
  EXPECT_EQ(ep, nullptr);
  ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
  dev_->Fail("GetCmEvent", -EIO);
  struct rpma_conn_req* req = nullptr;
  EXPECT_EQ(rpma_ep_next_conn_req(ep_, nullptr, &req), RPMA_E_PROVIDER);
  EXPECT_EQ(req, nullptr);
}

TEST_F(SeamTest, ConnReqNewMapsProviderFailures) {
  struct rpma_conn_cfg* cfg = nullptr;
  ASSERT_EQ(rpma_conn_cfg_new(&cfg), 0);
  ASSERT_EQ(rpma_conn_cfg_set_rcq_size(cfg, 4), 0);
  ASSERT_EQ(rpma_conn_cfg_set_compl_channel(cfg, true), 0);
  struct rpma_conn_req* req = nullptr;
  dev_->Fail("CreateActiveId", -ENOMEM);
  EXPECT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), cfg, &req),
            RPMA_E_NOMEM);
  dev_->Fail("CreateActiveId", -EINVAL);
  EXPECT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), cfg, &req),
            RPMA_E_PROVIDER);
  struct Case {
    const char* op;
    int nth;
  };
  for (Case c :
       {Case{"CreateCompletionChannel", 1}, Case{"CreateCq", 1},
        Case{"CreateCq", 2}, Case{"RequestNotify", 1}, Case{"CreateQp", 1}}) {
    dev_->Fail(c.op, -EIO, c.nth);
    EXPECT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), cfg, &req),
              RPMA_E_PROVIDER)
        << c.op << " #" << c.nth;
    EXPECT_EQ(req, nullptr);
    dev_->Fail(c.op, 0, 1);  // drop what a shorter run left unconsumed
  }
  rpma_conn_cfg_delete(&cfg);
}

TEST_F(SeamTest, ConnReqConnectMapsProviderFailuresAndConsumes) {
  ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
  for (const char* op : {"CreateCmChannel", "Migrate", "RegMr", "Connect"}) {
    struct rpma_conn_req* req = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), nullptr, &req), 0);
    dev_->Fail(op, -EIO);
    struct rpma_conn* conn = nullptr;
    EXPECT_EQ(rpma_conn_req_connect(&req, nullptr, &conn), RPMA_E_PROVIDER)
        << op;
    EXPECT_EQ(req, nullptr) << op;
    EXPECT_EQ(conn, nullptr) << op;
  }
}

TEST_F(SeamTest, PassiveConnectFailuresRejectTheClient) {
  struct rpma_conn_req* sreq = nullptr;
  ASSERT_NO_FATAL_FAILURE(Request(&sreq));
  dev_->Fail("Accept", -EIO);
  EXPECT_EQ(rpma_conn_req_connect(&sreq, nullptr, &server_), RPMA_E_PROVIDER);
  EXPECT_EQ(sreq, nullptr);
  EXPECT_EQ(server_, nullptr);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  ASSERT_EQ(NextEvent(client_, &ev), 0);
  EXPECT_EQ(ev, RPMA_CONN_REJECTED);
}

TEST_F(SeamTest, ConnectionCallsMapProviderFailures) {
  ASSERT_NO_FATAL_FAILURE(Establish());
  std::vector<char> buf(64);
  struct rpma_mr_local* mr = nullptr;
  ASSERT_EQ(rpma_mr_reg(peer_, buf.data(), buf.size(),
                        RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &mr),
            0);
  dev_->Fail("PostSend", -ENOMEM);
  EXPECT_EQ(rpma_send(client_, mr, 0, 8, RPMA_F_COMPLETION_ALWAYS, nullptr),
            RPMA_E_PROVIDER);
  dev_->Fail("PostRecv", -ENOMEM);
  EXPECT_EQ(rpma_recv(client_, mr, 0, 8, nullptr), RPMA_E_PROVIDER);
  struct rpma_cq* cq = nullptr;
  ASSERT_EQ(rpma_conn_get_cq(client_, &cq), 0);
  struct ibv_wc wc;
  int got = -7;
  dev_->Fail("Poll", -EIO);
  EXPECT_EQ(rpma_cq_get_wc(cq, 2, &wc, &got), RPMA_E_PROVIDER);
  EXPECT_EQ(got, -7);
  dev_->Fail("GetCqEvent", -EIO);
  EXPECT_EQ(rpma_cq_wait(cq), RPMA_E_NO_COMPLETION);
  enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
  dev_->Fail("GetCmEvent", -EIO);
  EXPECT_EQ(rpma_conn_next_event(client_, &ev), RPMA_E_PROVIDER);
  EXPECT_EQ(ev, RPMA_CONN_UNDEFINED);
  dev_->Fail("Disconnect", -EIO);
  EXPECT_EQ(rpma_conn_disconnect(client_), RPMA_E_PROVIDER);
  // Nothing else changed: the connection still works.
  ASSERT_EQ(rpma_recv(server_, mr, 8, 8, nullptr), 0);
  ASSERT_EQ(rpma_send(client_, mr, 0, 8, RPMA_F_COMPLETION_ALWAYS, nullptr), 0);
  int n = 0;
  for (int i = 0; i < 500 && n == 0; i++) {
    if (rpma_cq_get_wc(cq, 1, &wc, nullptr) == 0)
      n = 1;
    else
      usleep(10000);
  }
  EXPECT_EQ(n, 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  rpma_conn_delete(&client_);
  rpma_conn_delete(&server_);
  rpma_mr_dereg(&mr);
}

}  // namespace
}  // namespace rpma_test
