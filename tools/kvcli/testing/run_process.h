// RunProcess — runs a program to completion with the given stdin text and
// extra environment, capturing stdout and stderr apart (neither is a
// terminal). Bounded: the program is killed after `timeout`.
#ifndef KV_TOOLS_KVCLI_TESTING_RUN_PROCESS_H_
#define KV_TOOLS_KVCLI_TESTING_RUN_PROCESS_H_

#include <chrono>
#include <string>
#include <vector>

namespace kv::kvcli::testing {

struct ProcessResult {
  int code = -1;  // exit code, 128 + signal, or -1 on timeout
  std::string out;
  std::string err;
};

ProcessResult RunProcess(
    const std::vector<std::string>& argv, const std::string& stdin_text = "",
    const std::vector<std::string>& env = {},
    std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A fresh directory under $TMPDIR (or /tmp); RemoveTree deletes it.
std::string MakeTempDir(const std::string& prefix);
void RemoveTree(const std::string& path);
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

}  // namespace kv::kvcli::testing

#endif  // KV_TOOLS_KVCLI_TESTING_RUN_PROCESS_H_
