// Write conditions and arguments the client refuses itself: if_absent
// together with if_version (a key cannot be both absent and at a
// version), keys outside 1..1024 bytes, values over the keyspace's limit
// — invalid_argument before anything is sent, in single calls and in a
// batch, and nothing changes.
#include <gtest/gtest.h>

#include <string>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

const WriteOptions kBoth{.if_absent = true, .if_version = 1};

TEST_F(ClientTest, IfAbsentWithIfVersionIsInvalidAndChangesNothing) {
  auto c = Open();
  KeyVersion v;
  ASSERT_TRUE(c->Put("present", "before", {.version = &v}).ok());
  const WriteOptions both{.if_absent = true, .if_version = v.sequence};
  Status st = c->Put("absent", "x", both);
  EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
  EXPECT_NE(st.message().find("if_absent"), std::string::npos) << st.message();
  EXPECT_TRUE(c->Put("present", "after", both).IsInvalidArgument());
  bool had = true;
  EXPECT_TRUE(c->Delete("present", both, &had).IsInvalidArgument());
  std::string got;
  EXPECT_TRUE(c->Get("absent", &got).IsNotFound());
  KeyVersion now;
  ASSERT_TRUE(c->Get("present", &got, &now).ok());
  EXPECT_EQ(got, "before");
  EXPECT_EQ(now.sequence, v.sequence);
  EXPECT_EQ(c->stats().puts, 1u);
  EXPECT_EQ(c->stats().deletes, 0u);
}

TEST_F(ClientTest, InvalidWritesInABatchFailAloneAndTheRestRun) {
  auto c = Open();
  Batch b;
  b.Put("a", "1");
  b.Put("both", "x", kBoth);
  b.Delete("both", kBoth);
  b.Put(std::string(1025, 'k'), "x");
  b.Put("big", std::string(c->max_value_size() + 1, 'b'));
  b.Get("");
  b.Put("z", "2");
  ASSERT_TRUE(c->Execute(&b).ok());
  EXPECT_TRUE(b.result(0).status.ok());
  for (size_t i = 1; i <= 5; i++) {
    EXPECT_TRUE(b.result(i).status.IsInvalidArgument())
        << i << ": " << b.result(i).status.ToString();
  }
  EXPECT_TRUE(b.result(6).status.ok());
  std::string got;
  EXPECT_TRUE(c->Get("both", &got).IsNotFound());
  EXPECT_TRUE(c->Get("big", &got).IsNotFound());
  EXPECT_EQ(c->stats().puts, 2u);
}

// With the server gone, a check that ran only after sending would end in
// unavailable or timed_out: these end in invalid_argument.
TEST_F(ClientTest, InvalidWritesAreRefusedBeforeAnythingIsSent) {
  ClientOptions o = Options();
  o.op_timeout = std::chrono::milliseconds(3000);
  auto c = Open(o);
  const uint32_t max = c->max_value_size();
  server_.Kill9();
  std::string got;
  EXPECT_TRUE(c->Put("k", "v", kBoth).IsInvalidArgument());
  EXPECT_TRUE(c->Delete("k", kBoth).IsInvalidArgument());
  EXPECT_TRUE(c->Put(std::string(1025, 'k'), "v").IsInvalidArgument());
  EXPECT_TRUE(c->Put("", "v").IsInvalidArgument());
  EXPECT_TRUE(c->Delete("").IsInvalidArgument());
  EXPECT_TRUE(c->Put("k", std::string(max + 1, 'v')).IsInvalidArgument());
  EXPECT_TRUE(c->Get(std::string(1025, 'k'), &got).IsInvalidArgument());
  Batch b;
  b.Put("k", "v", kBoth);
  b.Get("");
  ASSERT_TRUE(c->Execute(&b).ok());
  EXPECT_TRUE(b.result(0).status.IsInvalidArgument());
  EXPECT_TRUE(b.result(1).status.IsInvalidArgument());
  // The server really is gone.
  Status st = c->Put("k", "v");
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(st.IsInvalidArgument()) << st.ToString();
}

}  // namespace
}  // namespace kv::e2e
