// Helpers the kvadmin tests share: running the real binary, temporary
// directories, reading a file's bytes.
#ifndef KV_TOOLS_KVADMIN_KVADMIN_TEST_UTIL_H_
#define KV_TOOLS_KVADMIN_KVADMIN_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kv::kvadmin::testing {

struct Outcome {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs `kvadmin ARGS` through the shell.
inline Outcome Kvadmin(const std::string& args) {
  const std::string cmd = std::string(KVADMIN_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Counts the lines of `text` that start with `prefix`.
inline int CountLines(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0;
  return n;
}

// A fresh directory under /tmp with `pool` as the pool path.
class KvadminDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rpkv-kvadmin-XXXXXX";
    dir_ = mkdtemp(tmpl);
    pool_ = dir_ + "/pool";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  std::string pool_;
};

}  // namespace kv::kvadmin::testing

#endif  // KV_TOOLS_KVADMIN_KVADMIN_TEST_UTIL_H_
