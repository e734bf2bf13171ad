// rpma_ext.h over the failure-injecting provider (fake_provider.h): the
// provider errors of the extensions map to the documented codes, and a
// request whose move or join failed is unchanged and still accepts.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "api_test_util.h"
#include "fake_provider.h"
#include "librpma.h"
#include "rpma_ext.h"

namespace rpma_test {
namespace {

class ExtSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    UseTcp();
    dev_ = FakeDevice::Create(kAddr, rpma::prov::DeviceCaps{});
    ASSERT_NE(dev_, nullptr);
    ASSERT_EQ(rpma_peer_new(dev_->context(), &peer_), 0);
    ASSERT_EQ(rpma_peer_new(dev_->context(), &ks_), 0);
    port_ = Port(9);
    ASSERT_EQ(rpma_ep_listen(peer_, kAddr, port_.c_str(), &ep_), 0);
    struct rpma_conn_req* creq = nullptr;
    ASSERT_EQ(rpma_conn_req_new(peer_, kAddr, port_.c_str(), nullptr, &creq),
              0);
    ASSERT_EQ(rpma_conn_req_connect(&creq, nullptr, &client_), 0);
    int fd = -1;
    ASSERT_EQ(rpma_ep_get_fd(ep_, &fd), 0);
    ASSERT_TRUE(Readable(fd, 5000));
    ASSERT_EQ(rpma_ep_next_conn_req(ep_, nullptr, &req_), 0);
  }
  void TearDown() override {
    if (req_ != nullptr) rpma_conn_req_delete(&req_);
    if (client_ != nullptr) rpma_conn_delete(&client_);
    if (server_ != nullptr) rpma_conn_delete(&server_);
    if (ep_ != nullptr) rpma_ep_shutdown(&ep_);
    EXPECT_EQ(rpma_peer_delete(&ks_), 0);
    EXPECT_EQ(rpma_peer_delete(&peer_), 0);
  }
  void Accept() {
    ASSERT_EQ(rpma_conn_req_connect(&req_, nullptr, &server_), 0);
    enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
    ASSERT_EQ(NextEvent(client_, &ev), 0);
    ASSERT_EQ(ev, RPMA_CONN_ESTABLISHED);
  }

  FakeDevice* dev_ = nullptr;
  struct rpma_peer* peer_ = nullptr;
  struct rpma_peer* ks_ = nullptr;
  std::string port_;
  struct rpma_ep* ep_ = nullptr;
  struct rpma_conn_req* req_ = nullptr;
  struct rpma_conn* client_ = nullptr;
  struct rpma_conn* server_ = nullptr;
};

TEST_F(ExtSeamTest, SetPeerMapsProviderFailuresAndKeepsTheRequest) {
  dev_->Fail("MoveQp", -ENOMEM);
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), RPMA_E_NOMEM);
  dev_->Fail("MoveQp", -EPERM);
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), RPMA_E_PROVIDER);
  dev_->Fail("MoveQp", -EOPNOTSUPP);
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), RPMA_E_NOSUPP);
  dev_->Fail("MoveQp", -EINVAL);
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), RPMA_E_INVAL);
  // Unchanged by the failures: the move and the accept still work.
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), 0);
  ASSERT_NO_FATAL_FAILURE(Accept());
}

TEST_F(ExtSeamTest, SetPeerWithoutAQpAfterwardsIsAProviderError) {
  dev_->Fail("MoveQp", -EIO);  // verbs: could not recreate it anywhere
  EXPECT_EQ(rpma_conn_req_set_peer(req_, ks_), RPMA_E_PROVIDER);
}

TEST_F(ExtSeamTest, SetGroupMapsProviderFailuresAndKeepsTheRequest) {
  struct rpma_conn_group* group = nullptr;
  dev_->Fail("CreateCompletionChannel", -EMFILE);
  EXPECT_EQ(rpma_conn_group_new(peer_, &group), RPMA_E_PROVIDER);
  EXPECT_EQ(group, nullptr);
  ASSERT_EQ(rpma_conn_group_new(peer_, &group), 0);
  dev_->Fail("CreateCq", -ENOMEM);
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_PROVIDER);
  dev_->Fail("ReplaceQp", -ENOMEM);
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_NOMEM);
  dev_->Fail("ReplaceQp", -EPERM);
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_PROVIDER);
  dev_->Fail("ReplaceQp", -EOPNOTSUPP);
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_NOSUPP);
  dev_->Fail("ReplaceQp", -EINVAL);
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_INVAL);
  // Unchanged by the failures: the join and the accept still work, and no
  // CQ was destroyed under a live QP along the way.
  struct rpma_conn_group* probe = group;
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), 0);
  EXPECT_EQ(rpma_conn_group_delete(&probe), RPMA_E_INVAL);  // now a member
  ASSERT_NO_FATAL_FAILURE(Accept());
  (void)rpma_conn_disconnect(server_);
  EXPECT_EQ(rpma_conn_delete(&server_), 0);
  EXPECT_EQ(rpma_conn_group_delete(&group), 0);
  for (const std::string& call : dev_->log()) {
    EXPECT_EQ(call.find("VIOLATION"), std::string::npos) << call;
  }
}

TEST_F(ExtSeamTest, SetGroupWithoutAQpAfterwardsIsAProviderError) {
  struct rpma_conn_group* group = nullptr;
  ASSERT_EQ(rpma_conn_group_new(peer_, &group), 0);
  dev_->Fail("ReplaceQp", -EIO);  // verbs: could not recreate it anywhere
  EXPECT_EQ(rpma_conn_req_set_group(req_, group), RPMA_E_PROVIDER);
  EXPECT_EQ(rpma_conn_req_delete(&req_), 0);
  EXPECT_EQ(rpma_conn_group_delete(&group), 0);
}

TEST_F(ExtSeamTest, ConnMrRegAndAdvanceMapProviderFailures) {
  ASSERT_EQ(rpma_conn_req_set_peer(req_, ks_), 0);
  ASSERT_NO_FATAL_FAILURE(Accept());
  char buf[64];
  const int usage = RPMA_MR_USAGE_WRITE_DST;
  struct rpma_mr_local* mr = nullptr;
  dev_->Fail("RegMrForQp", -ENOMEM);
  EXPECT_EQ(rpma_conn_mr_reg(server_, buf, 64, usage, &mr), RPMA_E_NOMEM);
  dev_->Fail("RegMrForQp", -EIO);
  EXPECT_EQ(rpma_conn_mr_reg(server_, buf, 64, usage, &mr), RPMA_E_PROVIDER);
  dev_->Fail("RegMrForQp", -EOPNOTSUPP);
  EXPECT_EQ(rpma_conn_mr_reg(server_, buf, 64, usage, &mr), RPMA_E_NOSUPP);
  EXPECT_EQ(mr, nullptr);
  ASSERT_EQ(rpma_conn_mr_reg(server_, buf, 64, usage, &mr), 0);
  dev_->Fail("RaiseRemoteFloor", -EOPNOTSUPP);
  EXPECT_EQ(rpma_mr_advance(mr, 8), RPMA_E_NOSUPP);
  EXPECT_EQ(rpma_mr_advance(mr, 8), 0);
  EXPECT_EQ(rpma_mr_dereg(&mr), 0);
  (void)rpma_conn_disconnect(server_);
  EXPECT_EQ(rpma_conn_delete(&server_), 0);
}

}  // namespace
}  // namespace rpma_test
