#include "kv/cluster/node_registration.h"

#include <gtest/gtest.h>

namespace kv::cluster {
namespace {

TEST(NodeRegistrationTest, RoundTrips) {
  NodeRegistration r{3, "10.0.0.7:7000", 1718000000123};
  ASSERT_TRUE(r.Validate().ok());
  Result<NodeRegistration> d = NodeRegistration::Decode(r.Encode());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, r);
  NodeRegistration v6{4294967295u, "[::1]:1", 0};
  EXPECT_EQ(NodeRegistration::Decode(v6.Encode()).value(), v6);
}

TEST(NodeRegistrationTest, ValidateRefusesBadFields) {
  EXPECT_FALSE((NodeRegistration{0, "h:1", 0}).Validate().ok());
  EXPECT_FALSE((NodeRegistration{1, "h", 0}).Validate().ok());
  EXPECT_FALSE((NodeRegistration{1, "h:0", 0}).Validate().ok());
  EXPECT_FALSE((NodeRegistration{1, "h :1", 0}).Validate().ok());
  EXPECT_FALSE((NodeRegistration{1, "h\n:1", 0}).Validate().ok());
  EXPECT_FALSE(
      (NodeRegistration{1, std::string(300, 'h') + ":1", 0}).Validate().ok());
  EXPECT_FALSE((NodeRegistration{1, "h:1", -1}).Validate().ok());
}

TEST(NodeRegistrationTest, DecodeTrustsNothing) {
  const char* bad[] = {
      "",
      "null",
      "[]",
      "{",
      "{}",
      R"({"node_id":1,"address":"h:1"})",
      R"({"node_id":1,"started_ms":0})",
      R"({"address":"h:1","started_ms":0})",
      R"({"node_id":0,"address":"h:1","started_ms":0})",
      R"({"node_id":-1,"address":"h:1","started_ms":0})",
      R"({"node_id":4294967296,"address":"h:1","started_ms":0})",
      R"({"node_id":1.5,"address":"h:1","started_ms":0})",
      R"({"node_id":"1","address":"h:1","started_ms":0})",
      R"({"node_id":1,"address":7,"started_ms":0})",
      R"({"node_id":1,"address":"nope","started_ms":0})",
      R"({"node_id":1,"address":"h:1","started_ms":-5})",
      R"({"node_id":1,"address":"h:1","started_ms":1e3})",
      R"({"node_id":1,"address":"h:1","started_ms":18446744073709551615})",
      R"({"node_id":1,"address":"h:1","started_ms":0,"x":[[[]]]})",
  };
  for (const char* text : bad) {
    Result<NodeRegistration> d = NodeRegistration::Decode(text);
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption) << text;
  }
  EXPECT_EQ(NodeRegistration::Decode(std::string(5000, ' ')).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(NodeRegistration::Decode(std::string(4000, '[')).status().code(),
            StatusCode::kCorruption);
}

TEST(NodeRegistrationTest, UnknownMembersAreIgnored) {
  Result<NodeRegistration> d = NodeRegistration::Decode(
      R"({"node_id":2,"address":"a:9","started_ms":5,"zone":"eu"})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->node_id, 2u);
}

}  // namespace
}  // namespace kv::cluster
