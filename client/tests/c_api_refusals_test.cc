// The C API's refusals that need a connection: a condition without
// meaning (expected version 0), keys outside 1..1024 bytes, values over
// the keyspace's limit, NULL value with a length — RPKV_E_INVAL with the
// outputs reset, before anything is sent: with the server gone they are
// still RPKV_E_INVAL, not RPKV_E_UNAVAILABLE.
#include <gtest/gtest.h>

#include <string>

#include "rpkv/rpkv.h"
#include "server_process.h"

namespace {

class CApiRefusalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = kv::e2e::MakeTempDir("rpkv-capi-refusals");
    kv::Status st = server_.Start(
        {"--pool=" + dir_ + "/pool", "--pool_size=64M", "--segment_size=64K"});
    ASSERT_TRUE(st.ok()) << st.ToString();
    rpkv_options o;
    rpkv_options_init(&o);
    o.op_timeout_ms = 3000;
    ASSERT_EQ(rpkv_connect(server_.address().c_str(), "default", &o, &db_),
              RPKV_OK)
        << rpkv_errmsg(nullptr);
  }
  void TearDown() override {
    rpkv_close(db_);
    if (server_.running()) server_.Stop();
    kv::e2e::RemoveTree(dir_);
  }
  // Every refusal, each checked for RPKV_E_INVAL and reset outputs.
  void ExpectRefusals() {
    const std::string k1025(1025, 'k');
    const std::string over(size_t{rpkv_max_value_size(db_)} + 1, 'v');
    uint64_t ver = 99;
    EXPECT_EQ(rpkv_put_if_version(db_, "k", 1, "v", 1, 0, &ver), RPKV_E_INVAL);
    EXPECT_EQ(ver, 0u);
    EXPECT_EQ(rpkv_delete_if_version(db_, "k", 1, 0), RPKV_E_INVAL);
    EXPECT_EQ(rpkv_put(db_, k1025.data(), k1025.size(), "v", 1), RPKV_E_INVAL);
    EXPECT_EQ(rpkv_put(db_, "", 0, "v", 1), RPKV_E_INVAL);
    EXPECT_EQ(rpkv_put(db_, "k", 1, nullptr, 1), RPKV_E_INVAL);
    EXPECT_EQ(rpkv_put(db_, "k", 1, over.data(), over.size()), RPKV_E_INVAL);
    ver = 99;
    EXPECT_EQ(rpkv_put_if_absent(db_, k1025.data(), k1025.size(), "v", 1, &ver),
              RPKV_E_INVAL);
    EXPECT_EQ(ver, 0u);
    EXPECT_EQ(rpkv_delete(db_, k1025.data(), k1025.size()), RPKV_E_INVAL);
    void* v = reinterpret_cast<void*>(uintptr_t{1});
    size_t n = 9;
    EXPECT_EQ(rpkv_get(db_, k1025.data(), k1025.size(), &v, &n), RPKV_E_INVAL);
    EXPECT_EQ(v, nullptr);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(rpkv_get(db_, "", 0, &v, &n), RPKV_E_INVAL);
    EXPECT_EQ(rpkv_exists(db_, k1025.data(), k1025.size()), RPKV_E_INVAL);
  }

  std::string dir_;
  kv::e2e::ServerProcess server_;
  rpkv* db_ = nullptr;
};

TEST_F(CApiRefusalsTest, RefusedWithALiveServerAndNothingChanges) {
  ExpectRefusals();
  void* v = nullptr;
  size_t n = 0;
  EXPECT_EQ(rpkv_get(db_, "k", 1, &v, &n), RPKV_NOT_FOUND);
}

TEST_F(CApiRefusalsTest, RefusedBeforeAnythingIsSent) {
  server_.Kill9();
  ExpectRefusals();
  // The server really is gone.
  const int rc = rpkv_put(db_, "k", 1, "v", 1);
  EXPECT_TRUE(rc == RPKV_E_UNAVAILABLE || rc == RPKV_E_TIMEDOUT) << rc;
}

}  // namespace
