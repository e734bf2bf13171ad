// kv::cluster::testing::EtcdProcess: a real etcd for integration tests.
//
// Start() picks two free ports on 127.0.0.1 (client and peer; binds port
// 0, reads it, closes — and picks again, up to 3 times, when etcd then
// finds one taken), makes a fresh temporary directory for --data-dir and
// the log, forks/execs the etcd binary (/usr/bin/etcd, or $KV_ETCD_BINARY)
// as a one-member cluster and waits, bounded, until GET /health answers
// {"health":"true"}. Stop() sends SIGTERM and reaps, SIGKILL after a
// bounded wait; the data directory stays, so Start() again brings back the
// same store on the same ports (a restart). The destructor stops etcd and
// removes the directory. The child gets SIGKILL if the test process dies.
//
// Tests call EtcdBinaryMissing() first and GTEST_SKIP with its message:
// only a missing binary skips (tools/setup.sh installs etcd-server, so CI
// runs them); any other failure to start fails the test.
//
// Thread-safety: one object per thread; not copyable.
#ifndef KV_CLUSTER_TESTS_ETCD_PROCESS_H_
#define KV_CLUSTER_TESTS_ETCD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>

#include "kv/endpoint.h"
#include "kv/status.h"

namespace kv::cluster::testing {

// The etcd binary the tests run.
std::string EtcdBinary();

// Empty when the binary is there; else why the tests skip.
std::string EtcdBinaryMissing();

// A port on 127.0.0.1 that was free a moment ago.
int PickFreePort();

class EtcdProcess {
 public:
  EtcdProcess() = default;
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // First call: new ports and data directory; later calls (after Stop):
  // the same ones. Errors: unavailable with the tail of etcd's log when it
  // exits or is not healthy within 20 s.
  Status Start();
  // SIGTERM, reap (SIGKILL after 5 s). Keeps the data. Idempotent.
  void Stop();
  bool running() const { return pid_ > 0; }
  // SIGSTOP / SIGCONT: etcd hangs (connections accepted by the kernel,
  // never answered) and comes back. Stop() resumes a paused etcd first.
  void Pause();
  void Resume();

  Endpoint endpoint() const {
    return {"127.0.0.1", std::to_string(client_port_)};
  }
  // "etcd://127.0.0.1:<client port>".
  std::string url() const;
  // What etcd wrote so far (for failure messages).
  std::string Log() const;

 private:
  Status Launch();
  Status WaitHealthy(std::chrono::milliseconds timeout);

  pid_t pid_ = -1;
  std::string dir_;  // holds data/ and etcd.log
  int client_port_ = 0;
  int peer_port_ = 0;
};

}  // namespace kv::cluster::testing

#endif  // KV_CLUSTER_TESTS_ETCD_PROCESS_H_
