#include "kv/server/server_options.h"

#include <gtest/gtest.h>

namespace kv::server {
namespace {

TEST(ServerOptionsTest, AcceptsValidFlags) {
  auto o = MakeServerOptions("/tmp/a.pool", 64ull << 20, "127.0.0.1:7500");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->listen.port, "7500");
}

TEST(ServerOptionsTest, RejectsMissingPool) {
  EXPECT_TRUE(MakeServerOptions("", 64ull << 20, "127.0.0.1:7400")
                  .status()
                  .IsInvalidArgument());
}

TEST(ServerOptionsTest, RejectsTinyPool) {
  EXPECT_TRUE(MakeServerOptions("/tmp/a.pool", 1 << 20, "127.0.0.1:7400")
                  .status()
                  .IsInvalidArgument());
}

TEST(ServerOptionsTest, RejectsBadListenAddress) {
  EXPECT_TRUE(MakeServerOptions("/tmp/a.pool", 64ull << 20, "nowhere")
                  .status()
                  .IsInvalidArgument());
}

}  // namespace
}  // namespace kv::server
