#include "suggest.h"

#include <gtest/gtest.h>

namespace kv::kvcli {
namespace {

TEST(EditDistance, CountsInsertDeleteSubstituteAndSwap) {
  EXPECT_EQ(EditDistance("get", "get"), 0u);
  EXPECT_EQ(EditDistance("gte", "get"), 1u);  // swap of neighbours
  EXPECT_EQ(EditDistance("gt", "get"), 1u);
  EXPECT_EQ(EditDistance("gett", "get"), 1u);
  EXPECT_EQ(EditDistance("pat", "put"), 1u);
  EXPECT_EQ(EditDistance("GET", "get"), 0u);  // case ignored
  EXPECT_EQ(EditDistance("", "scan"), 4u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(Nearest, SuggestsOnlyCloseWords) {
  const std::vector<std::string_view> names = {"put",  "get",       "del",
                                               "mget", "keyspaces", "ping"};
  EXPECT_EQ(Nearest("gte", names), "get");
  EXPECT_EQ(Nearest("pt", names), "put");
  EXPECT_EQ(Nearest("kyspaces", names), "keyspaces");
  EXPECT_EQ(Nearest("keyspcaes", names), "keyspaces");
  EXPECT_EQ(Nearest("keyzpcaes", names), "keyspaces");  // 2 edits, 9 letters
  EXPECT_EQ(Nearest("frob", names), "");
  EXPECT_EQ(Nearest("x", names), "");  // 1 letter: nothing is "near"
  EXPECT_EQ(Nearest("", names), "");
}

}  // namespace
}  // namespace kv::kvcli
