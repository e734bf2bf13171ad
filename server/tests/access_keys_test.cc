#include "access_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace kv::server {
namespace {

TEST(AccessKeysTest, ParsesLinesCommentsAndBlanks) {
  auto keys = AccessKeys::Parse(
      "# keys\n\ndefault  s3cret-0123456789\r\n  other\tk2-0123456789abcd  \n");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ((*keys)->size(), 2u);
  EXPECT_TRUE((*keys)->Protected("default"));
  EXPECT_TRUE((*keys)->Check("default", "s3cret-0123456789"));
  EXPECT_TRUE((*keys)->Check("other", "k2-0123456789abcd"));
  EXPECT_FALSE((*keys)->Check("default", "k2-0123456789abcd"));
  EXPECT_FALSE((*keys)->Check("default", ""));
  EXPECT_FALSE((*keys)->Protected("open"));
  EXPECT_FALSE((*keys)->Check("open", "anything"));
}

TEST(AccessKeysTest, RejectsMalformedLinesNamingTheLine) {
  for (const char* text :
       {"default\n", "bad/name key\n", "a k\na k2\n", "a has space\n"}) {
    auto keys = AccessKeys::Parse(text);
    EXPECT_TRUE(keys.status().IsInvalidArgument()) << text;
    EXPECT_NE(keys.status().message().find("line "), std::string::npos);
  }
  EXPECT_TRUE(AccessKeys::Parse("a " + std::string(65, 'k'))
                  .status()
                  .IsInvalidArgument());
  EXPECT_TRUE(AccessKeys::Parse("a " + std::string(64, 'k')).ok());
}

TEST(AccessKeysTest, RejectsShortSecretsNamingFileAndLine) {
  auto parsed = AccessKeys::Parse("# keys\ndefault " + std::string(15, 'k'));
  EXPECT_TRUE(parsed.status().IsInvalidArgument());
  EXPECT_NE(parsed.status().message().find("line 2"), std::string::npos)
      << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("at least 16"), std::string::npos)
      << parsed.status().message();
  EXPECT_TRUE(AccessKeys::Parse("default " + std::string(16, 'k')).ok());
  EXPECT_TRUE(AccessKeys::Parse("default x").status().IsInvalidArgument());
  char path[] = "/tmp/kv_keys_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "default short\n", 14), 14);
  close(fd);
  chmod(path, 0600);
  auto loaded = AccessKeys::Load(path);
  EXPECT_TRUE(loaded.status().IsInvalidArgument());
  EXPECT_NE(loaded.status().message().find(path), std::string::npos)
      << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("line 1"), std::string::npos)
      << loaded.status().message();
  unlink(path);
}

TEST(AccessKeysTest, LoadRefusesFilesOthersCanRead) {
  char path[] = "/tmp/kv_keys_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "default kkkkkkkkkkkkkkkk\n", 25), 25);
  close(fd);
  for (mode_t mode : {0644, 0640, 0604, 0620}) {
    chmod(path, mode);
    auto keys = AccessKeys::Load(path);
    EXPECT_EQ(keys.status().code(), StatusCode::kPermissionDenied) << mode;
  }
  chmod(path, 0600);
  auto keys = AccessKeys::Load(path);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_TRUE((*keys)->Check("default", "kkkkkkkkkkkkkkkk"));
  chmod(path, 0400);
  EXPECT_TRUE(AccessKeys::Load(path).ok());
  unlink(path);
  EXPECT_TRUE(AccessKeys::Load(path).status().IsNotFound());
}

TEST(AccessKeysTest, ConstantTimeEqualComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEqual("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEqual(std::string("a\0", 2), "a"));
  EXPECT_TRUE(ConstantTimeEqual("", ""));
  EXPECT_FALSE(ConstantTimeEqual(std::string(65, 'a'), std::string(65, 'a')));
}

}  // namespace
}  // namespace kv::server

namespace kv::server {
namespace {

TEST(PeerKeyTest, OneKeyLineAmongCommentsAndBlanks) {
  auto k = ParsePeerKey("# the cluster's peer key\n\n  0123456789abcdef  \n");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(*k, "0123456789abcdef");
}

TEST(PeerKeyTest, RefusesShortLongSpacedTwoOrNone) {
  EXPECT_NE(ParsePeerKey("short\n").status().message().find("16 to 64"),
            std::string::npos);
  EXPECT_TRUE(ParsePeerKey(std::string(65, 'k')).status().IsInvalidArgument());
  EXPECT_NE(
      ParsePeerKey("0123456789 abcdef\n").status().message().find("spaces"),
      std::string::npos);
  EXPECT_NE(ParsePeerKey("0123456789abcdef\n0123456789abcdeg\n")
                .status()
                .message()
                .find("line 2: a second key"),
            std::string::npos);
  EXPECT_NE(ParsePeerKey("# nothing\n").status().message().find("no key"),
            std::string::npos);
}

}  // namespace
}  // namespace kv::server
