#include "semfuzz_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "kv/store/mapping.h"
#include "kv/store/persister.h"
#include "server.h"

namespace kv::semfuzz {
namespace {

int g_report_fd = 2;
bool g_verbose = false;
std::string g_pool_path;
int g_port = 0;

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// A free TCP port on 127.0.0.1 (the listener sets SO_REUSEADDR, so every
// server of this process can take it again).
int PickPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Violation("semfuzz: cannot pick a port");
  }
  close(fd);
  return ntohs(a.sin_port);
}

class NoPersister : public store::Persister {
 public:
  void Persist(const void*, size_t) override {}
};

// The pool file mapped shared and read-only: the server's stores are
// visible at once (same page cache); nothing here can write.
class ReadOnlyFileMapping : public store::Mapping {
 public:
  static Result<std::unique_ptr<ReadOnlyFileMapping>> Open(
      const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::NotFound("semfuzz: cannot open " + path);
    struct stat st {};
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
      close(fd);
      return Status::IoError("semfuzz: cannot stat " + path);
    }
    const size_t size = static_cast<size_t>(st.st_size);
    void* p = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return Status::IoError("semfuzz: cannot map " + path);
    return std::unique_ptr<ReadOnlyFileMapping>(
        new ReadOnlyFileMapping(static_cast<uint8_t*>(p), size));
  }
  ~ReadOnlyFileMapping() override { munmap(base_, size_); }
  uint8_t* base() override { return base_; }
  size_t size() const override { return size_; }
  store::Persister* persister() override { return &persister_; }
  bool read_only() const override { return true; }
  std::string granularity() const override { return "page"; }

 private:
  ReadOnlyFileMapping(uint8_t* base, size_t size) : base_(base), size_(size) {}
  uint8_t* base_;
  size_t size_;
  NoPersister persister_;
};

}  // namespace

void InitProcess() {
  g_verbose = std::getenv("SEMFUZZ_VERBOSE") != nullptr;
  int fd = dup(2);
  if (fd >= 0) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    g_report_fd = fd;
  }
  setenv("RPMA_PROVIDER", "tcp", 1);
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  g_pool_path =
      std::string(dir) + "/rpkv-semfuzz-" + std::to_string(getpid()) + ".pool";
  g_port = PickPort();
  std::atexit([] { unlink(g_pool_path.c_str()); });
}

void Violation(const std::string& what) {
  WriteAll(g_report_fd,
           "\n==== commit_semantic_fuzzer VIOLATION: " + what + "\n");
  __builtin_trap();
}

bool Verbose() { return g_verbose; }

void Trace(const std::string& line) {
  if (g_verbose) WriteAll(g_report_fd, "semfuzz: " + line + "\n");
}

SemServer::SemServer() = default;
SemServer::~SemServer() { Stop(); }

int SemServer::port() const { return g_port; }
const std::string& SemServer::pool_path() const { return g_pool_path; }

void SemServer::Start(bool group_commit, uint32_t segment_size) {
  Stop();
  unlink(g_pool_path.c_str());
  server::ServerOptions o;
  o.pool_path = g_pool_path;
  o.pool_size = kPoolSize;
  o.listen = Endpoint{"127.0.0.1", std::to_string(g_port)};
  o.provider = "tcp";
  o.segment_size = segment_size;
  o.index_capacity = kIndexCapacity;
  // More than one input can open (kMaxOps reconnects + the clients): a
  // session that is still tearing down counts against the limit, so a
  // tight vanish/reconnect loop on a loaded host could otherwise be refused.
  o.max_connections = 256;
  o.cleaner_threshold = 1.0;  // never: dead > 1.0 * used cannot hold
  o.max_inflight = 8;
  o.hello_timeout = std::chrono::milliseconds(1000);
  o.group_commit = group_commit;
  // The REFILL rate limit would make most refills of a fast input busy
  // (the model accepts busy, but then nothing more is explored).
  o.refill_rate = 100000;
  o.refill_burst = 1000;
  Result<std::unique_ptr<server::Server>> s = server::Server::Open(o);
  for (int retry = 0; !s.ok() && retry < 3; retry++) {
    // Someone else may have taken the port since it was picked.
    unlink(g_pool_path.c_str());
    g_port = PickPort();
    o.listen.port = std::to_string(g_port);
    s = server::Server::Open(o);
  }
  if (!s.ok()) {
    Violation("semfuzz: server did not start: " + s.status().ToString());
  }
  server_ = std::move(s).value();
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) Violation("semfuzz: eventfd failed");
  server::Server* raw = server_.get();
  const int fd = stop_fd_;
  thread_ = std::thread([raw, fd] { raw->Run(fd); });
}

void SemServer::Stop() {
  if (server_ == nullptr) return;
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();
  server_.reset();  // the shutdown: sessions end, the pool closes
  close(stop_fd_);
  stop_fd_ = -1;
}

Result<std::unique_ptr<StoreView>> StoreView::Open(const std::string& path) {
  Result<std::unique_ptr<ReadOnlyFileMapping>> m =
      ReadOnlyFileMapping::Open(path);
  if (!m.ok()) return m.status();
  store::PoolOptions po;
  po.read_only = true;
  Result<std::unique_ptr<store::Pool>> pool =
      store::Pool::OpenOn(std::move(m).value(), po);
  if (!pool.ok()) return pool.status();
  std::unique_ptr<StoreView> v(new StoreView());
  v->pool_ = std::move(pool).value();
  Result<std::shared_ptr<store::Keyspace>> ks =
      v->pool_->GetKeyspace("default");
  if (!ks.ok()) return ks.status();
  v->keyspace_ = std::move(ks).value();
  return v;
}

StoreView::~StoreView() {
  keyspace_.reset();
  pool_.reset();
}

}  // namespace kv::semfuzz
