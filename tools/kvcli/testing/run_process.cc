#include "run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kv::kvcli::testing {

using Clock = std::chrono::steady_clock;

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::string& stdin_text,
                         const std::vector<std::string>& env,
                         std::chrono::milliseconds timeout) {
  ProcessResult r;
  int in[2], out[2], err[2];
  // Close-on-exec: a child started by another thread at the same moment
  // must not inherit these ends (it would hold this child's stdin open,
  // and a script-mode kvcli reads to EOF: two such children wait for
  // each other). dup2 below clears the flag on 0, 1 and 2.
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0) {
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    execv(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  signal(SIGPIPE, SIG_IGN);
  // Every fd is -1 once closed; poll ignores negative fds.
  int to_child = in[1], from_out = out[0], from_err = err[0];
  size_t written = 0;
  if (stdin_text.empty()) {
    close(to_child);
    to_child = -1;
  } else {
    fcntl(to_child, F_SETFL, O_NONBLOCK);
  }
  const auto deadline = Clock::now() + timeout;
  while (from_out >= 0 || from_err >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd p[3] = {
        {from_out, POLLIN, 0}, {from_err, POLLIN, 0}, {to_child, POLLOUT, 0}};
    if (poll(p, 3, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    int* fds[2] = {&from_out, &from_err};
    for (int i = 0; i < 2; i++) {
      if (p[i].revents == 0) continue;
      const ssize_t n = read(*fds[i], buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(*fds[i]);
        *fds[i] = -1;
      }
    }
    if (to_child >= 0 && p[2].revents != 0) {
      const ssize_t n = write(to_child, stdin_text.data() + written,
                              stdin_text.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
          written == stdin_text.size()) {
        close(to_child);
        to_child = -1;
      }
    }
  }
  for (int fd : {to_child, from_out, from_err}) {
    if (fd >= 0) close(fd);
  }
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return r;  // code -1: timed out
    }
    usleep(5000);
  }
  r.code = WIFEXITED(status)     ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                 : -1;
  return r;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace kv::kvcli::testing
