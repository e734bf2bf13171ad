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

namespace kv::server {
namespace {

TEST(ServerOptionsTest, ParsesByteSizes) {
  EXPECT_EQ(ParseByteSize("4096").value(), 4096u);
  EXPECT_EQ(ParseByteSize("4K").value(), 4096u);
  EXPECT_EQ(ParseByteSize("4M").value(), 4u << 20);
  EXPECT_EQ(ParseByteSize("1G").value(), 1u << 30);
  EXPECT_EQ(ParseByteSize("2GiB").value(), 2ull << 30);
  EXPECT_EQ(ParseByteSize("1t").value(), 1ull << 40);
  for (const char* bad :
       {"", "G", "1Q", "-1", "1.5G", "99999999999999999999"}) {
    EXPECT_TRUE(ParseByteSize(bad).status().IsInvalidArgument()) << bad;
  }
  EXPECT_TRUE(ParseByteSize("17179869184G").status().IsInvalidArgument());
}

TEST(ServerOptionsTest, ValidatesTheRest) {
  ServerOptions o;
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  ServerOptions bad = o;
  bad.provider = "ib";
  EXPECT_TRUE(ValidateServerOptions(bad).IsInvalidArgument());
  bad = o;
  bad.segment_size = 1000;
  EXPECT_TRUE(ValidateServerOptions(bad).IsInvalidArgument());
  bad = o;
  bad.cleaner_threshold = 0;
  EXPECT_TRUE(ValidateServerOptions(bad).IsInvalidArgument());
  bad = o;
  bad.max_connections = 0;
  EXPECT_TRUE(ValidateServerOptions(bad).IsInvalidArgument());
}

}  // namespace
}  // namespace kv::server
