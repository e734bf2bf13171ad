// End-to-end: access keys through kv::Client — the right key admits, a
// missing or wrong one is refused with a message that says which, every
// time (the refusal arrives as WELCOME right before the server's
// disconnect).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class ClientAccessTest : public ClientTest {
 protected:
  std::vector<std::string> ServerFlags() override {
    const std::string keys = dir_ + "/keys";
    {
      std::ofstream f(keys);
      f << "default s3cret-0123456789\n";
    }
    chmod(keys.c_str(), 0600);
    return {"--pool=" + dir_ + "/pool", "--pool_size=64M",
            "--access_keys=" + keys, "--allow_create"};
  }
};

TEST_F(ClientAccessTest, RightKeyAdmitsWrongOrMissingKeyIsRefused) {
  ClientOptions o = Options();
  o.access_key = "s3cret-0123456789";
  auto c = Open(o);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  for (int i = 0; i < 20; i++) {
    o.access_key = "wrong";
    auto wrong = Client::Connect(o);
    ASSERT_FALSE(wrong.ok()) << i;
    EXPECT_TRUE(wrong.status().code() == StatusCode::kPermissionDenied)
        << i << ": " << wrong.status().ToString();
    EXPECT_NE(wrong.status().message().find("wrong"), std::string::npos);
  }
  o.access_key.clear();
  auto missing = Client::Connect(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kPermissionDenied)
      << missing.status().ToString();
  EXPECT_NE(missing.status().message().find("--access_key"), std::string::npos);
  // The refusals changed nothing; the admitted client still works.
  std::string got;
  ASSERT_TRUE(c->Get("k", &got).ok());
  EXPECT_EQ(got, "v");
  // A keyspace without a listed key needs none.
  o.keyspace = "open";
  o.create_if_missing = true;
  EXPECT_NE(Open(o), nullptr);
}

}  // namespace
}  // namespace kv::e2e
