#include "tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kv::kvcli {
namespace {

std::vector<std::string> Words(std::string_view line) {
  auto t = Tokenize(line);
  EXPECT_TRUE(t.ok()) << line << ": " << t.status().ToString();
  std::vector<std::string> out;
  if (!t.ok()) return out;
  for (const Token& tok : *t) out.push_back(tok.text);
  return out;
}

using W = std::vector<std::string>;

TEST(TokenizerTest, SplitsOnWhitespace) {
  EXPECT_EQ(Words("  put\tk   v \r\n"), (W{"put", "k", "v"}));
  EXPECT_EQ(Words(""), W{});
  EXPECT_EQ(Words("   "), W{});
}

TEST(TokenizerTest, QuotesKeepSpacesAndJoinAdjacentParts) {
  EXPECT_EQ(Words(R"(put "a b" 'c d')"), (W{"put", "a b", "c d"}));
  EXPECT_EQ(Words(R"(a"b c"d 'it''s')"), (W{"ab cd", "its"}));
  EXPECT_EQ(Words(R"("" '')"), (W{"", ""}));
}

TEST(TokenizerTest, EscapesInDoubleQuotesAndBareWords) {
  EXPECT_EQ(Words(R"("a\x00b\n\t\r\\\"\'")"),
            (W{std::string("a\0b\n\t\r\\\"'", 9)}));
  EXPECT_EQ(Words(R"(a\ b \x41\x7a \e\0)"),
            (W{"a b", "Az", std::string("\x1b\0", 2)}));
  EXPECT_EQ(Words(R"("\xff\xFE")"), (W{"\xff\xfe"}));
}

TEST(TokenizerTest, SingleQuotesAreLiteralButForQuoteAndBackslash) {
  EXPECT_EQ(Words(R"('C:\dir\n' 'a\'b' 'x\\y')"),
            (W{R"(C:\dir\n)", "a'b", R"(x\y)"}));
}

TEST(TokenizerTest, LeadingAtMarksAFileOnlyWhenUnquoted) {
  auto t = Tokenize(R"(put k @/tmp/v "@lit" \@lit2 a@b)");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 6u);
  EXPECT_EQ((*t)[2], (Token{"/tmp/v", true}));
  EXPECT_EQ((*t)[3], (Token{"@lit", false}));
  EXPECT_EQ((*t)[4], (Token{"@lit2", false}));
  EXPECT_EQ((*t)[5], (Token{"a@b", false}));
}

TEST(TokenizerTest, HashStartsACommentOnlyAtAWordStart) {
  EXPECT_EQ(Words("# all comment"), W{});
  EXPECT_EQ(Words("put k v # note"), (W{"put", "k", "v"}));
  EXPECT_EQ(Words(R"(put k#1 "#2" \#3)"), (W{"put", "k#1", "#2", "#3"}));
}

TEST(TokenizerTest, ErrorsNameTheProblemAndColumn) {
  struct Case {
    const char* line;
    const char* message;
  } cases[] = {
      {R"(put "abc)", "unterminated \" quote at column 5"},
      {"put 'abc", "unterminated ' quote at column 5"},
      {"put k v\\", "trailing backslash at column 8"},
      {R"(put \x4)", "\\x needs two hex digits (e.g. \\x00) at column 5"},
      {R"(put "\xg0")", "\\x needs two hex digits"},
      {R"(put \q)", "unknown escape \\q"},
  };
  for (const Case& c : cases) {
    auto t = Tokenize(c.line);
    ASSERT_FALSE(t.ok()) << c.line;
    EXPECT_TRUE(t.status().IsInvalidArgument());
    EXPECT_NE(t.status().message().find(c.message), std::string::npos)
        << c.line << " -> " << t.status().message();
  }
}

TEST(TokenizerTest, QuoteLeavesPlainWordsAlone) {
  EXPECT_EQ(Quote("user:42"), "user:42");
  EXPECT_EQ(Quote("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(Quote("a@b#c"), "a@b#c");
}

TEST(TokenizerTest, QuoteEscapesWhatTheTokenizerWouldChange) {
  EXPECT_EQ(Quote(""), R"("")");
  EXPECT_EQ(Quote("a b"), R"("a b")");
  EXPECT_EQ(Quote("@x"), R"("@x")");
  EXPECT_EQ(Quote("#x"), R"("#x")");
  EXPECT_EQ(Quote(std::string("a\0\n\x1b\x7f\xff\"\\", 8)),
            R"("a\x00\n\x1b\x7f\xff\"\\")");
  // C1 controls and bidi overrides are not shown raw.
  EXPECT_EQ(Quote("\xc2\x85"), R"("\xc2\x85")");
  EXPECT_EQ(Quote("\xe2\x80\xae"), R"("\xe2\x80\xae")");
}

TEST(TokenizerTest, QuoteRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; b++) all += static_cast<char>(b);
  for (const std::string& s :
       {all, std::string("'"), std::string("x'y"), std::string("\\@")}) {
    auto t = Tokenize(Quote(s));
    ASSERT_TRUE(t.ok()) << Quote(s);
    ASSERT_EQ(t->size(), 1u);
    EXPECT_EQ((*t)[0].text, s);
    EXPECT_FALSE((*t)[0].from_file);
  }
}

}  // namespace
}  // namespace kv::kvcli
