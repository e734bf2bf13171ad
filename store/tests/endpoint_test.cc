#include "kv/endpoint.h"

#include <gtest/gtest.h>

namespace kv {
namespace {

TEST(EndpointTest, ParsesHostAndPort) {
  auto e = Endpoint::Parse("127.0.0.1:7400");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, "7400");
  EXPECT_EQ(e->ToString(), "127.0.0.1:7400");
}

TEST(EndpointTest, ParsesBracketedIpv6) {
  auto e = Endpoint::Parse("[::1]:7400");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->ToString(), "[::1]:7400");
}

TEST(EndpointTest, RejectsMalformedAddresses) {
  for (const char* bad :
       {"", "127.0.0.1", ":7400", "host:", "host:0", "host:65536", "host:12x",
        "::1:7400", "[::1]7400", "[::1:7400"}) {
    auto e = Endpoint::Parse(bad);
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_TRUE(e.status().IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace kv
