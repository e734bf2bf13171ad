#include "kv/cluster/etcd_endpoints.h"

#include <gtest/gtest.h>

namespace kv::cluster {
namespace {

TEST(EtcdEndpointsTest, ParsesOneAndSeveralInOrder) {
  Result<std::vector<Endpoint>> one =
      ParseEtcdEndpoints("etcd://127.0.0.1:2379");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->at(0).host, "127.0.0.1");
  EXPECT_EQ(one->at(0).port, "2379");
  Result<std::vector<Endpoint>> three =
      ParseEtcdEndpoints("etcd://127.0.0.1:2379,etcd-b:22379,[::1]:32379");
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  ASSERT_EQ(three->size(), 3u);
  EXPECT_EQ(three->at(1).host, "etcd-b");
  EXPECT_EQ(three->at(2).host, "::1");
  EXPECT_EQ(three->at(2).port, "32379");
}

TEST(EtcdEndpointsTest, FormatIsTheInverseOfParse) {
  const char* text = "etcd://127.0.0.1:2379,[::1]:22379";
  Result<std::vector<Endpoint>> list = ParseEtcdEndpoints(text);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(FormatEtcdEndpoints(*list), text);
}

struct BadCase {
  const char* text;
  const char* says;
};

TEST(EtcdEndpointsTest, RefusesMalformedListsNamingTheProblem) {
  const BadCase cases[] = {
      {"", "missing the etcd:// scheme"},
      {"127.0.0.1:2379", "missing the etcd:// scheme"},
      {"http://127.0.0.1:2379", "the scheme must be etcd://"},
      {"ETCD://127.0.0.1:2379", "the scheme must be etcd://"},
      {"etcd://", "no endpoint after etcd://"},
      {"etcd://a:1,,b:2", "empty endpoint"},
      {"etcd://a:1,", "empty endpoint"},
      {"etcd://,a:1", "empty endpoint"},
      {"etcd://a", "missing port"},
      {"etcd://a:0", "port must be a number from 1 to 65535"},
      {"etcd://a:65536", "port must be a number"},
      {"etcd://a:12x", "port must be a number"},
      {"etcd://:2379", "empty host"},
      {"etcd://::1:2379", "IPv6 addresses need brackets"},
      {"etcd://[::1:2379", "missing ']'"},
      {"etcd://a:1,b:2,a:1", "a:1 is listed twice"},
      {"etcd://a:1 ,b:2", "port must be a number"},
  };
  for (const BadCase& c : cases) {
    Result<std::vector<Endpoint>> r = ParseEtcdEndpoints(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.text << " -> " << r.status().message();
    EXPECT_NE(r.status().message().find("etcd://127.0.0.1:2379"),
              std::string::npos)
        << "the message shows an example: " << r.status().message();
  }
}

}  // namespace
}  // namespace kv::cluster
