// PtySession — runs a program on a real pseudo-terminal (forkpty), so that
// tests see what a person at a terminal sees: the prompt, line editing,
// Tab completion, Ctrl-D. Every wait is bounded.
//
// Thread-safety: one object per thread; not copyable.
#ifndef KV_TOOLS_KVCLI_TESTING_PTY_SESSION_H_
#define KV_TOOLS_KVCLI_TESTING_PTY_SESSION_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace kv::kvcli::testing {

class PtySession {
 public:
  PtySession() = default;
  ~PtySession();
  PtySession(const PtySession&) = delete;
  PtySession& operator=(const PtySession&) = delete;

  // Starts argv[0] with argv on a new pty (80x24), with `env` entries
  // ("NAME=value") added to this process's environment. False if forkpty
  // or exec failed.
  bool Start(const std::vector<std::string>& argv,
             const std::vector<std::string>& env);
  // Sends bytes as typed (e.g. "get k\r", "\t", "\x04" for Ctrl-D).
  void Type(const std::string& bytes);
  // Reads until everything printed since the last Expect contains `text`;
  // true if it appeared within `timeout`. The text up to and including the
  // match is consumed.
  bool Expect(const std::string& text,
              std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits until the terminal is in non-canonical (raw) mode, as a line
  // editor sets it while it reads a line; true if so within `timeout`.
  // A prompt can be on the screen a moment before the editor switches the
  // mode, and a Ctrl-D typed in that moment is an EOF of the canonical
  // line discipline that the switch to raw mode discards.
  bool WaitForRawMode(
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Waits for the program to exit; its exit code, 128 + signal, or -1 on
  // timeout (then it is killed).
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Everything read so far that Expect has not consumed.
  const std::string& pending() const { return pending_; }
  // Everything read since Start.
  const std::string& transcript() const { return transcript_; }

 private:
  bool ReadSome(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_;
  std::string transcript_;
};

}  // namespace kv::kvcli::testing

#endif  // KV_TOOLS_KVCLI_TESTING_PTY_SESSION_H_
