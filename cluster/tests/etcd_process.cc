#include "etcd_process.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace kv::cluster::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET http://127.0.0.1:<port>/health; true on {"health":"true"}.
bool Healthy(int port) {
  CURL* c = curl_easy_init();
  if (c == nullptr) return false;
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/health";
  std::string body;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  return rc == CURLE_OK &&
         body.find("\"health\":\"true\"") != std::string::npos;
}

}  // namespace

std::string EtcdBinary() {
  const char* env = std::getenv("KV_ETCD_BINARY");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/etcd";
}

std::string EtcdBinaryMissing() {
  if (access(EtcdBinary().c_str(), X_OK) == 0) return "";
  return "no etcd binary at " + EtcdBinary() +
         " (install Debian's etcd-server: bash tools/setup.sh)";
}

int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

EtcdProcess::~EtcdProcess() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string EtcdProcess::url() const {
  return "etcd://" + endpoint().ToString();
}

std::string EtcdProcess::Log() const {
  std::ifstream in(dir_ + "/etcd.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status EtcdProcess::Start() {
  if (running()) return Status::Ok();
  if (!dir_.empty()) return Launch();  // a restart: same ports and data
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    // tmpfs when there is one: etcd's WAL fsyncs then cost nothing, and a
    // loaded CI machine's disk cannot stall a lease grant past a test's
    // request timeout (it did once: 1 s). Durability of etcd itself is not
    // what these tests test.
    const fs::path base = access("/dev/shm", W_OK) == 0
                              ? fs::path("/dev/shm")
                              : fs::temp_directory_path();
    std::string tmpl = (base / "rpkv-etcd-XXXXXX");
    if (mkdtemp(tmpl.data()) == nullptr) {
      return Status::IoError("mkdtemp failed for " + tmpl);
    }
    client_port_ = PickFreePort();
    peer_port_ = PickFreePort();
    dir_ = tmpl;
    last = Launch();
    if (last.ok()) return last;
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
  return last;
}

Status EtcdProcess::Launch() {
  const std::string client = "http://127.0.0.1:" + std::to_string(client_port_);
  const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> args = {EtcdBinary(),
                                   "--name=n0",
                                   "--data-dir=" + dir_ + "/data",
                                   "--listen-client-urls=" + client,
                                   "--advertise-client-urls=" + client,
                                   "--listen-peer-urls=" + peer,
                                   "--initial-advertise-peer-urls=" + peer,
                                   "--initial-cluster=n0=" + peer,
                                   "--logger=zap",
                                   "--log-level=warn"};
  const std::string log = dir_ + "/etcd.log";
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return Status::Unavailable("fork failed");
  if (pid == 0) {
    // Dies with the test, even when the test is killed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  Status s = WaitHealthy(std::chrono::seconds(20));
  if (!s.ok()) Stop();
  return s;
}

Status EtcdProcess::WaitHealthy(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      std::string tail = Log();
      if (tail.size() > 2000) tail = tail.substr(tail.size() - 2000);
      return Status::Unavailable("etcd exited while starting; its log:\n" +
                                 tail);
    }
    if (Healthy(client_port_)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Unavailable("etcd was not healthy within " +
                             std::to_string(timeout.count()) + " ms");
}

void EtcdProcess::Pause() {
  if (pid_ > 0) kill(pid_, SIGSTOP);
}

void EtcdProcess::Resume() {
  if (pid_ > 0) kill(pid_, SIGCONT);
}

void EtcdProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  kill(pid_, SIGCONT);  // a paused etcd cannot act on SIGTERM
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int wstatus = 0;
  while (waitpid(pid_, &wstatus, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

}  // namespace kv::cluster::testing
