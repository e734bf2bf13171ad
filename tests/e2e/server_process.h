// kv::e2e::ServerProcess — a real kvserver process for end-to-end tests.
//
// Start() picks a free port on 127.0.0.1 (binds port 0, reads it, closes;
// retries when the server then finds it taken), forks/execs
// build/bin/kvserver (KV_E2E_KVSERVER_PATH, a compile definition) with the
// given flags plus --listen, sends its stderr to a file and waits (bounded)
// for the line "kvserver: ready on HOST:PORT". Stop() is SIGTERM + wait;
// Kill9() is SIGKILL + wait. The destructor kills a process still running.
//
// Sanitizer reports in a child: every reap (Stop, Kill9, Wait, a failed
// Start, the destructor; ChildProcess's exit; RunToExit) scans what the
// child wrote to its log since it started for a ThreadSanitizer report
// (tests/tsan.supp, tools/test.sh's TSan pass). A report is printed to
// the test's stderr at once and makes the test process exit with 66 (TSan's
// exitcode) when it ends, whatever the test itself asserted: a race in a
// kvserver fails the test that started it, even when the test ignores the
// server's exit code or kills it.
//
// Thread-safety: one object per thread; not copyable.
#ifndef KV_TESTS_E2E_SERVER_PROCESS_H_
#define KV_TESTS_E2E_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "kv/status.h"

namespace kv::e2e {

// The kvserver binary under test.
std::string KvserverPath();

// A fresh, empty directory under $TMPDIR (or /tmp) for a test's files.
// Removed by the caller (RemoveTree) or left for inspection.
std::string MakeTempDir(const std::string& prefix);
void RemoveTree(const std::string& path);

// A port on 127.0.0.1 that was free a moment ago.
int PickFreePort();

// Scans `log` (what child `who` wrote) for a ThreadSanitizer report; if
// there is one, prints it and arranges for the process to exit with 66 at
// exit (see the header comment). Returns true if a report was found.
// Thread-safe.
bool NoteSanitizerReport(const std::string& log, const std::string& who);

// Runs `argv` (argv[0] is the program path) to completion with a bounded
// wait; returns its exit code (128 + signal if killed), stderr in *err.
int RunToExit(const std::vector<std::string>& argv, std::string* err,
              std::chrono::milliseconds timeout = std::chrono::seconds(20));

// Any helper process (e.g. a client killed mid-put): stdout and stderr go
// to a file; bounded waits for output and exit.
class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Starts argv (argv[0] the program). Errors: unavailable.
  Status Start(const std::vector<std::string>& argv);
  // Waits until the output contains `text`; false on timeout or exit.
  bool WaitForOutput(
      const std::string& text,
      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::string Output() const;
  // SIGKILL and reap; returns 128 + 9.
  int Kill9();
  pid_t pid() const { return pid_; }

 private:
  // Scans the output once, when the process has exited or been killed.
  void Reaped();

  pid_t pid_ = -1;
  std::string dir_;
  std::string out_path_;
};

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts kvserver with `flags` (e.g. {"--pool=/tmp/x/pool",
  // "--allow_create"}) and a --listen on a free port (unless flags carry
  // --listen themselves), and waits for the ready line. Errors:
  // unavailable (the process exited first: its exit code and stderr in
  // the message) or timed_out (no ready line within `timeout`).
  Status Start(const std::vector<std::string>& flags,
               std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Like Start, on the same flags and port as the last Start (restart
  // after Stop or Kill9).
  Status Restart(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // SIGTERM, then waits up to `timeout`; returns the exit code (0 on a
  // clean shutdown), 128 + signal if it died of one, -1 if it had to be
  // killed after the timeout (SIGKILL).
  int Stop(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap. Returns 128 + 9 normally.
  int Kill9();
  // Waits for the process to exit on its own (no signal); like Stop.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  bool running() const { return pid_ > 0; }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string host() const { return "127.0.0.1"; }
  // "127.0.0.1:PORT", as a client's --server takes it.
  std::string address() const { return host() + ":" + std::to_string(port_); }
  // The file stderr goes to, and its current contents (all runs appended).
  const std::string& stderr_path() const { return stderr_path_; }
  std::string StderrText() const;
  // Waits until the server's stderr contains `text` (bounded); true if so.
  bool WaitForLog(const std::string& text,
                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  Status Launch(std::chrono::milliseconds timeout);
  int Reap(std::chrono::milliseconds timeout, bool kill_on_timeout);
  // Scans this run's part of the log (from run_offset_) once it is over.
  void Reaped();

  std::vector<std::string> flags_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool own_listen_ = false;
  std::string stderr_path_;
  std::string dir_;
  size_t run_offset_ = 0;  // the log's size when the current run started
};

}  // namespace kv::e2e

#endif  // KV_TESTS_E2E_SERVER_PROCESS_H_
