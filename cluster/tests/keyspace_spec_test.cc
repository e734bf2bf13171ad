// KeyspaceSpec (keyspace_spec.h): its rules, its JSON, hostile values.
#include "kv/cluster/keyspace_spec.h"

#include <gtest/gtest.h>

#include <string>

namespace kv::cluster {
namespace {

TEST(KeyspaceSpecTest, RoundTrips) {
  for (const KeyspaceSpec& spec :
       {KeyspaceSpec{"users", 4, 1}, KeyspaceSpec{"a", 1, 8},
        KeyspaceSpec{std::string(kMaxClusterKeyspaceNameSize, 'n'), 1024, 3}}) {
    ASSERT_TRUE(spec.Validate().ok()) << spec.name;
    Result<KeyspaceSpec> back = KeyspaceSpec::Decode(spec.name, spec.Encode());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, spec);
  }
  EXPECT_EQ((KeyspaceSpec{"users", 4, 2}).Encode(),
            R"({"replicas":2,"shards":4})");
}

TEST(KeyspaceSpecTest, ValidateRefusesEachBadField) {
  const struct {
    KeyspaceSpec spec;
    const char* says;
  } cases[] = {
      {{"", 1, 1}, "1..63 bytes"},
      {{"a b", 1, 1}, "[A-Za-z0-9_.-]"},
      {{"a/b", 1, 1}, "[A-Za-z0-9_.-]"},
      {{std::string(58, 'n'), 1, 1}, "at most 57 bytes"},
      {{"k", 0, 1}, "1..1024 shards, got 0"},
      {{"k", 1025, 1}, "1..1024 shards, got 1025"},
      {{"k", 1, 0}, "1..8 replicas, got 0"},
      {{"k", 1, 9}, "1..8 replicas, got 9"},
  };
  for (const auto& c : cases) {
    Status st = c.spec.Validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.says;
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
  }
}

TEST(KeyspaceSpecTest, DecodeTrustsNothing) {
  const struct {
    std::string json;
    const char* says;
  } cases[] = {
      {"", "not a JSON object"},
      {"null", "not a JSON object"},
      {"[]", "not a JSON object"},
      {"{", "not a JSON object"},
      {"4", "not a JSON object"},
      {"{}", "\"shards\" must be an integer in 1..1024"},
      {R"({"shards":4})", "\"replicas\" must be an integer in 1..8"},
      {R"({"replicas":1})", "\"shards\""},
      {R"({"shards":0,"replicas":1})", "\"shards\""},
      {R"({"shards":1025,"replicas":1})", "\"shards\""},
      {R"({"shards":-1,"replicas":1})", "\"shards\""},
      {R"({"shards":4.0,"replicas":1})", "\"shards\""},
      {R"({"shards":"4","replicas":1})", "\"shards\""},
      {R"({"shards":true,"replicas":1})", "\"shards\""},
      {R"({"shards":4294967297,"replicas":1})", "\"shards\""},
      {R"({"shards":99999999999999999999999,"replicas":1})", "\"shards\""},
      {R"({"shards":4,"replicas":0})", "\"replicas\""},
      {R"({"shards":4,"replicas":9})", "\"replicas\""},
      {R"({"shards":4,"replicas":null})", "\"replicas\""},
      {R"({"shards":4,"replicas":[1]})", "\"replicas\""},
      {std::string(10000, '['), "larger than 1024 bytes"},
      {std::string(600, '[') + std::string(600, ']'), "larger than"},
      {std::string(100, '{'), "nested too deeply"},
      {R"({"shards":4,"replicas":1,"x":[[[[[1]]]]]})", "nested too deeply"},
      {R"({"shards":4,"replicas":1,"pad":")" + std::string(1100, 'p') + "\"}",
       "larger than 1024 bytes"},
  };
  for (const auto& c : cases) {
    Result<KeyspaceSpec> d = KeyspaceSpec::Decode("users", c.json);
    ASSERT_FALSE(d.ok()) << c.json.substr(0, 80);
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption)
        << c.json.substr(0, 80);
    EXPECT_EQ(d.status().message().rfind("keyspace spec 'users': ", 0), 0u)
        << d.status().message();
    EXPECT_NE(d.status().message().find(c.says), std::string::npos)
        << c.json.substr(0, 80) << ": " << d.status().message();
  }
}

TEST(KeyspaceSpecTest, DecodeRefusesABadNameFromTheKey) {
  const std::string value = R"({"shards":4,"replicas":1})";
  for (const std::string& name :
       {std::string(), std::string("a b"), std::string(58, 'n'),
        std::string(5000, 'n')}) {
    Result<KeyspaceSpec> d = KeyspaceSpec::Decode(name, value);
    EXPECT_EQ(d.status().code(), StatusCode::kCorruption) << name.size();
    EXPECT_LT(d.status().message().size(), 400u);  // quoted bounded
  }
}

TEST(KeyspaceSpecTest, UnknownMembersAreIgnored) {
  Result<KeyspaceSpec> d = KeyspaceSpec::Decode(
      "users",
      R"({"zone":"eu","shards":16,"replicas":3,"hints":{"rack":[1,2]}})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, (KeyspaceSpec{"users", 16, 3}));
}

}  // namespace
}  // namespace kv::cluster
