#include "server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#ifndef KV_E2E_KVSERVER_PATH
#error "KV_E2E_KVSERVER_PATH must name the kvserver binary"
#endif

namespace kv::e2e {
namespace {

using Clock = std::chrono::steady_clock;

std::string ReadFileFrom(const std::string& path, size_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  std::string all = s.str();
  return offset < all.size() ? all.substr(offset) : "";
}

size_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

int ExitCodeOf(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

// Forks and execs argv with stderr (and stdout) appended to `err_path`.
// The child dies with the test process (PR_SET_PDEATHSIG).
pid_t Spawn(const std::vector<std::string>& argv, const std::string& err_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd >= 0) {
    dup2(fd, 2);
    dup2(fd, 1);
    if (fd > 2) close(fd);
  }
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  execv(args[0], args.data());
  fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
  _exit(127);
}

// Waits for pid up to timeout; returns the exit code or -2 if still
// running.
int WaitPid(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int wstatus = 0;
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) return ExitCodeOf(wstatus);
    if (r < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) return -2;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// TSan's exit code (its default `exitcode`), also ours for a child's race.
constexpr int kSanitizerExitCode = 66;

std::mutex report_mu;
bool report_seen = false;  // guarded by report_mu

// At exit (after main returned, or exit() from a test): a child's report
// overrides a passing status. _exit: the rest of the process's exit work
// (static destructors) is irrelevant to a test already failed.
void ExitIfChildReported() {
  std::lock_guard<std::mutex> lock(report_mu);
  if (!report_seen) return;
  fprintf(stderr,
          "kv::e2e: a child process reported a ThreadSanitizer race (above); "
          "failing this test process with %d\n",
          kSanitizerExitCode);
  fflush(stderr);
  _exit(kSanitizerExitCode);
}

}  // namespace

bool NoteSanitizerReport(const std::string& log, const std::string& who) {
  const size_t at = log.find("WARNING: ThreadSanitizer:");
  if (at == std::string::npos) return false;
  // The report from its first line (its leading "=====" line before it).
  size_t begin = log.rfind("==================", at);
  if (begin == std::string::npos) begin = at;
  constexpr size_t kMaxShown = 32 * 1024;  // the report, not the whole log
  fprintf(stderr, "kv::e2e: %s reported a ThreadSanitizer race:\n%s\n",
          who.c_str(), log.substr(begin, kMaxShown).c_str());
  fflush(stderr);
  std::lock_guard<std::mutex> lock(report_mu);
  if (!report_seen) {
    report_seen = true;
    atexit(ExitIfChildReported);
  }
  return true;
}

std::string KvserverPath() { return KV_E2E_KVSERVER_PATH; }

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string templ =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + ".XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

int RunToExit(const std::vector<std::string>& argv, std::string* err,
              std::chrono::milliseconds timeout) {
  std::string dir = MakeTempDir("kv_run");
  std::string path = dir + "/stderr";
  pid_t pid = Spawn(argv, path);
  if (pid < 0) return -1;
  int code = WaitPid(pid, timeout);
  if (code == -2) {
    kill(pid, SIGKILL);
    code = WaitPid(pid, std::chrono::seconds(5));
    code = -1;
  }
  std::string text = ReadFileFrom(path, 0);
  NoteSanitizerReport(text, argv[0] + " (pid " + std::to_string(pid) + ")");
  if (err != nullptr) *err = text;
  RemoveTree(dir);
  return code;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) Kill9();
  RemoveTree(dir_);
}

Status ChildProcess::Start(const std::vector<std::string>& argv) {
  if (dir_.empty()) {
    dir_ = MakeTempDir("kv_child");
    out_path_ = dir_ + "/output";
  }
  pid_ = Spawn(argv, out_path_);
  return pid_ > 0 ? Status::Ok() : Status::Unavailable("fork failed");
}

bool ChildProcess::WaitForOutput(const std::string& text,
                                 std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (Output().find(text) != std::string::npos) return true;
    if (pid_ > 0 && WaitPid(pid_, std::chrono::milliseconds(0)) != -2) {
      Reaped();
      return Output().find(text) != std::string::npos;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::string ChildProcess::Output() const { return ReadFileFrom(out_path_, 0); }

int ChildProcess::Kill9() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGKILL);
  int code = WaitPid(pid_, std::chrono::seconds(10));
  Reaped();
  return code;
}

void ChildProcess::Reaped() {
  NoteSanitizerReport(Output(), "child pid " + std::to_string(pid_));
  pid_ = -1;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Kill9();
  RemoveTree(dir_);
}

Status ServerProcess::Start(const std::vector<std::string>& flags,
                            std::chrono::milliseconds timeout) {
  if (pid_ > 0) return Status::Busy("kvserver already running");
  flags_ = flags;
  own_listen_ = true;
  for (const auto& f : flags_) {
    if (f.rfind("--listen=", 0) == 0) {
      own_listen_ = false;
      port_ = atoi(f.substr(f.rfind(':') + 1).c_str());
    }
  }
  if (dir_.empty()) {
    dir_ = MakeTempDir("kv_server_process");
    stderr_path_ = dir_ + "/kvserver.stderr";
  }
  Status last = Status::Unavailable("no attempt");
  for (int attempt = 0; attempt < (own_listen_ ? 5 : 1); attempt++) {
    if (own_listen_) port_ = PickFreePort();
    last = Launch(timeout);
    if (last.ok() || !own_listen_) return last;
    // Retry only when the port was taken between picking and listening.
    if (last.message().find("cannot listen") == std::string::npos) break;
  }
  return last;
}

Status ServerProcess::Restart(std::chrono::milliseconds timeout) {
  if (pid_ > 0) return Status::Busy("kvserver already running");
  return Launch(timeout);
}

Status ServerProcess::Launch(std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{KvserverPath()};
  argv.insert(argv.end(), flags_.begin(), flags_.end());
  if (own_listen_)
    argv.push_back("--listen=127.0.0.1:" + std::to_string(port_));
  const size_t offset = FileSize(stderr_path_);
  run_offset_ = offset;
  pid_ = Spawn(argv, stderr_path_);
  if (pid_ < 0) return Status::Unavailable("fork failed");
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::string text = ReadFileFrom(stderr_path_, offset);
    if (text.find("kvserver: ready on ") != std::string::npos) {
      return Status::Ok();
    }
    int code = WaitPid(pid_, std::chrono::milliseconds(0));
    if (code != -2) {
      Reaped();
      return Status::Unavailable("kvserver exited with " +
                                 std::to_string(code) +
                                 " before ready: " + text);
    }
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      WaitPid(pid_, std::chrono::seconds(5));
      Reaped();
      return Status::TimedOut("kvserver not ready in time: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int ServerProcess::Reap(std::chrono::milliseconds timeout,
                        bool kill_on_timeout) {
  if (pid_ <= 0) return -1;
  int code = WaitPid(pid_, timeout);
  if (code == -2) {
    if (!kill_on_timeout) return -2;
    kill(pid_, SIGKILL);
    WaitPid(pid_, std::chrono::seconds(5));
    code = -1;
  }
  Reaped();
  return code;
}

void ServerProcess::Reaped() {
  NoteSanitizerReport(
      ReadFileFrom(stderr_path_, run_offset_),
      "kvserver pid " + std::to_string(pid_) + " (log " + stderr_path_ + ")");
  pid_ = -1;
}

int ServerProcess::Stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  return Reap(timeout, true);
}

int ServerProcess::Kill9() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGKILL);
  return Reap(std::chrono::seconds(10), true);
}

int ServerProcess::Wait(std::chrono::milliseconds timeout) {
  return Reap(timeout, true);
}

std::string ServerProcess::StderrText() const {
  return ReadFileFrom(stderr_path_, 0);
}

bool ServerProcess::WaitForLog(const std::string& text,
                               std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (StderrText().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return StderrText().find(text) != std::string::npos;
}

}  // namespace kv::e2e
