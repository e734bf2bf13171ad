#include "host_port_args.h"

#include <gtest/gtest.h>

namespace kv::kvcli {
namespace {

using V = std::vector<std::string>;

PreParsed Pre(const V& args) {
  V argv = {"kvcli"};
  argv.insert(argv.end(), args.begin(), args.end());
  return PreParseArgs(
      argv, [](std::string_view f) { return f == "server" || f == "keyspace"; },
      [](std::string_view w) { return w == "get" || w == "GET"; });
}

TEST(PreParseArgs, HostAndPortAreTakenOut) {
  PreParsed p = Pre({"-h", "10.0.0.1", "-p", "7401", "--raw", "get", "k"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.host, "10.0.0.1");
  EXPECT_EQ(p.port, "7401");
  EXPECT_EQ(p.args, (V{"kvcli", "--raw", "get", "k"}));
}

TEST(PreParseArgs, OnlyFlagsBeforeTheCommandCount) {
  PreParsed p = Pre({"put", "k", "-p"});
  EXPECT_EQ(p.error, "");
  EXPECT_FALSE(p.port);
  EXPECT_EQ(p.args, (V{"kvcli", "put", "k", "-p"}));
  p = Pre({"--", "-h", "x"});
  EXPECT_FALSE(p.host);
  EXPECT_EQ(p.args, (V{"kvcli", "--", "-h", "x"}));
}

TEST(PreParseArgs, LoneHIsHelp) {
  EXPECT_EQ(Pre({"-h"}).args, (V{"kvcli", "--help"}));
  EXPECT_EQ(Pre({"--raw", "-h"}).args, (V{"kvcli", "--raw", "--help"}));
}

TEST(PreParseArgs, MissingValuesNameTheFlag) {
  EXPECT_NE(Pre({"-h", "get", "k"}).error.find("flag -h needs a HOST"),
            std::string::npos);
  EXPECT_NE(Pre({"-h", "-p", "1"}).error.find("flag -h needs a HOST"),
            std::string::npos);
  EXPECT_NE(Pre({"-p"}).error.find("flag -p needs a PORT"), std::string::npos);
  EXPECT_NE(Pre({"-p", "GET", "k"}).error.find("flag -p needs a PORT"),
            std::string::npos);
  EXPECT_NE(Pre({"-p", "70000"}).error.find("invalid value '70000' for -p"),
            std::string::npos);
  EXPECT_EQ(Pre({"--server", "get", "k1"}).error,
            "flag --server is missing its value (--server=VALUE); 'get' is a "
            "command");
  EXPECT_NE(Pre({"--keyspace", "--raw"}).error.find("'--raw' is a flag"),
            std::string::npos);
  // A real value in the space form stays, and so does --flag=value.
  PreParsed p = Pre({"--server", "h:1", "--keyspace=get", "get", "k"});
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.args,
            (V{"kvcli", "--server", "h:1", "--keyspace=get", "get", "k"}));
}

TEST(ServerAddress, ReplacesHostOrPort) {
  EXPECT_EQ(ServerAddress("127.0.0.1:7400", {}, {}), "127.0.0.1:7400");
  EXPECT_EQ(ServerAddress("127.0.0.1:7400", "db", {}), "db:7400");
  EXPECT_EQ(ServerAddress("127.0.0.1:7400", {}, "7401"), "127.0.0.1:7401");
  EXPECT_EQ(ServerAddress("127.0.0.1:7400", "::1", "9"), "[::1]:9");
  EXPECT_EQ(ServerAddress("[::1]:7400", {}, "9"), "[::1]:9");
  EXPECT_FALSE(ServerAddress("get", {}, {}));
  EXPECT_FALSE(ServerAddress("host:", {}, {}));
  EXPECT_FALSE(ServerAddress("host:0", {}, {}));
  EXPECT_FALSE(ServerAddress(":7400", {}, {}));
}

}  // namespace
}  // namespace kv::kvcli
