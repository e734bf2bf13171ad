#include "glob.h"

#include <gtest/gtest.h>

namespace kv::kvcli {
namespace {

TEST(GlobTest, MatchesAsRedisMatch) {
  struct Case {
    const char* pattern;
    std::string key;
    bool match;
  } cases[] = {
      {"*", "", true},
      {"*", "anything", true},
      {"user:*", "user:1", true},
      {"user:*", "users", false},
      {"h?llo", "hello", true},
      {"h?llo", "hllo", false},
      {"h[ae]llo", "hallo", true},
      {"h[ae]llo", "hillo", false},
      {"h[^e]llo", "hallo", true},
      {"h[^e]llo", "hello", false},
      {"h[a-c]llo", "hbllo", true},
      {"h[a-c]llo", "hdllo", false},
      {"a\\*b", "a*b", true},
      {"a\\*b", "axb", false},
      {"*x*y*", "axbyc", true},
      {"*x*y*", "ayxb", false},
      {"a[b", "a[b", true},  // unterminated set: a literal [
      {"k?", std::string("k\0", 2), true},
      {"*end", "the end", true},
      {"*end", "the ends", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GlobMatch(c.pattern, c.key), c.match)
        << c.pattern << " vs " << c.key;
  }
}

TEST(GlobTest, PrefixStopsAtTheFirstWildcard) {
  EXPECT_EQ(GlobPrefix("user:*"), "user:");
  EXPECT_EQ(GlobPrefix("a\\*b*"), "a*b");
  EXPECT_EQ(GlobPrefix("h?llo"), "h");
  EXPECT_EQ(GlobPrefix("[ab]c"), "");
  EXPECT_EQ(GlobPrefix("plain"), "plain");
}

}  // namespace
}  // namespace kv::kvcli
