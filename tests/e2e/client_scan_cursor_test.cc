// Client::ScanPage: a cursor scan over one-sided reads gives every key
// once across its pages, ends at cursor 0, honours the prefix and the
// count hint, and refuses a cursor that is not of the keyspace.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "client_fixture.h"

namespace kv::e2e {
namespace {

class ScanCursorTest : public ClientTest {};

TEST_F(ScanCursorTest, PagesGiveEveryKeyOnceAndEndAtZero) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  Batch b;
  for (int i = 0; i < 2000; i++) {
    b.Put("p:" + std::to_string(i), "v" + std::to_string(i));
  }
  b.Put("other", "x");
  ASSERT_TRUE(c->Execute(&b).ok());
  for (size_t i = 0; i < b.size(); i++) ASSERT_TRUE(b.result(i).status.ok());

  std::map<std::string, int> seen;
  uint64_t cursor = 0;
  int pages = 0;
  size_t largest = 0;
  do {
    size_t n = 0;
    auto next = c->ScanPage(cursor, "p:", 100,
                            [&](std::string_view k, std::string_view v) {
                              seen[std::string(k)]++;
                              EXPECT_EQ("v" + std::string(k.substr(2)), v);
                              n++;
                            });
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (*next != 0) EXPECT_GT(*next, cursor);  // cursors move forward
    cursor = *next;
    largest = n > largest ? n : largest;
    ASSERT_LT(++pages, 100000);
  } while (cursor != 0);
  EXPECT_EQ(seen.size(), 2000u);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;  // no writes: once
  EXPECT_EQ(seen.count("other"), 0u);
  EXPECT_GT(pages, 10);
  EXPECT_LE(largest, 100u + 31u);  // count is a hint, a batch at most over

  // The whole-index Scan agrees.
  std::set<std::string> all;
  ASSERT_TRUE(c->Scan("p:", 0, [&](std::string_view k, std::string_view) {
                 all.insert(std::string(k));
                 return true;
               }).ok());
  EXPECT_EQ(all.size(), 2000u);
}

TEST_F(ScanCursorTest, ACursorOutsideTheIndexIsInvalid) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  auto r = c->ScanPage(uint64_t{1} << 40, "", 10,
                       [](std::string_view, std::string_view) {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not a cursor of this keyspace"),
            std::string::npos);
  // An empty keyspace: one page, nothing, cursor 0.
  size_t n = 0;
  auto e =
      c->ScanPage(0, "", 10, [&](std::string_view, std::string_view) { n++; });
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, 0u);
  EXPECT_EQ(n, 0u);
}

}  // namespace
}  // namespace kv::e2e
