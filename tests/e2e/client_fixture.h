// ClientTest: a kvserver process on a fresh pool (64 KiB segments, so
// refills happen often; --allow_create) and helpers to open clients.
#ifndef KV_TESTS_E2E_CLIENT_FIXTURE_H_
#define KV_TESTS_E2E_CLIENT_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kv/client/client.h"
#include "server_process.h"

namespace kv::e2e {

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("rpkv-client");
    Status st = server_.Start(ServerFlags());
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  void TearDown() override {
    if (server_.running()) server_.Stop();
    RemoveTree(dir_);
  }
  virtual std::vector<std::string> ServerFlags() {
    return {"--pool=" + dir_ + "/pool", "--pool_size=256M",
            "--segment_size=64K", "--allow_create"};
  }
  ClientOptions Options() {
    ClientOptions o;
    o.server = server_.address();
    o.keyspace = "default";
    return o;
  }
  std::unique_ptr<Client> Open(ClientOptions o) {
    auto c = Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  std::unique_ptr<Client> Open() { return Open(Options()); }

  std::string dir_;
  ServerProcess server_;
};

// The value of `name` in the server's INFO stats (the test fails when it
// is missing).
inline uint64_t StatsValue(Client* c, const std::string& name) {
  auto text = c->Info(Client::InfoTopic::kStats);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  std::istringstream in(text.ok() ? *text : "");
  std::string n;
  uint64_t v = 0;
  while (in >> n >> v) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no '" << name << "' in the stats";
  return 0;
}

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_CLIENT_FIXTURE_H_
