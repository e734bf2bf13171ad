#include "pty_session.h"

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace kv::kvcli::testing {

using Clock = std::chrono::steady_clock;

PtySession::~PtySession() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool PtySession::Start(const std::vector<std::string>& argv,
                       const std::vector<std::string>& env) {
  winsize ws{};
  ws.ws_row = 24;
  ws.ws_col = 80;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    setenv("TERM", "xterm", 1);
    execv(args[0], args.data());
    _exit(127);
  }
  return true;
}

void PtySession::Type(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

bool PtySession::ReadSome(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  const int r = poll(&p, 1, static_cast<int>(timeout.count()));
  if (r <= 0) return false;
  char buf[4096];
  const ssize_t n = read(fd_, buf, sizeof(buf));
  if (n <= 0) return false;  // EIO: the child closed the terminal
  pending_.append(buf, static_cast<size_t>(n));
  transcript_.append(buf, static_cast<size_t>(n));
  return true;
}

bool PtySession::Expect(const std::string& text,
                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const size_t at = pending_.find(text);
    if (at != std::string::npos) {
      pending_.erase(0, at + text.size());
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (!ReadSome(left)) {
      if (Clock::now() >= deadline) return false;
      // EOF/EIO: nothing more will come.
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) {
        return pending_.find(text) != std::string::npos;
      }
    }
  }
}

bool PtySession::WaitForRawMode(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    termios t;  // the master reports the slave's settings
    if (tcgetattr(fd_, &t) == 0 && (t.c_lflag & ICANON) == 0) return true;
    if (Clock::now() >= deadline) return false;
    usleep(1000);
  }
}

int PtySession::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = Clock::now() + timeout;
  int status = 0;
  while (true) {
    // Keep draining the terminal: a child blocked writing never exits.
    ReadSome(std::chrono::milliseconds(20));
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return -1;
    }
  }
  pid_ = -1;
  while (ReadSome(std::chrono::milliseconds(0))) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace kv::kvcli::testing
