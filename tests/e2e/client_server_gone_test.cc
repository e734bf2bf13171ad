// What a client says when its server goes away: a person's words, not the
// provider's ("Work Request Flushed Error" after a clean server stop).
#include "client_fixture.h"

namespace kv::e2e {
namespace {

using ClientServerGoneTest = ClientTest;

TEST_F(ClientServerGoneTest, CleanStopSaysTheServerClosedTheConnection) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Put("k", "v").ok());
  server_.Stop();
  Status st = c->Put("k", "w");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find(server_.address()), std::string::npos)
      << st.ToString();
  // The explanation comes first; the provider's words, if any, only after
  // it (in brackets, for a report).
  const size_t said = st.message().find("closed the connection");
  ASSERT_NE(said, std::string::npos) << st.ToString();
  const size_t raw = st.message().find("Work Request Flushed");
  if (raw != std::string::npos) {
    EXPECT_GT(raw, said) << st.ToString();
    EXPECT_EQ(st.message()[raw - 1], '[') << st.ToString();
  }
}

}  // namespace
}  // namespace kv::e2e
