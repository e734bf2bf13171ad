#include "access_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace kv::server {
namespace {

TEST(AccessKeysTest, ParsesLinesCommentsAndBlanks) {
  auto keys = AccessKeys::Parse("# keys\n\ndefault  s3cret\r\n  other\tk2  \n");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ((*keys)->size(), 2u);
  EXPECT_TRUE((*keys)->Protected("default"));
  EXPECT_TRUE((*keys)->Check("default", "s3cret"));
  EXPECT_TRUE((*keys)->Check("other", "k2"));
  EXPECT_FALSE((*keys)->Check("default", "k2"));
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

TEST(AccessKeysTest, LoadRefusesFilesOthersCanRead) {
  char path[] = "/tmp/kv_keys_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "default k\n", 10), 10);
  close(fd);
  for (mode_t mode : {0644, 0640, 0604, 0620}) {
    chmod(path, mode);
    auto keys = AccessKeys::Load(path);
    EXPECT_EQ(keys.status().code(), StatusCode::kPermissionDenied) << mode;
  }
  chmod(path, 0600);
  auto keys = AccessKeys::Load(path);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_TRUE((*keys)->Check("default", "k"));
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
