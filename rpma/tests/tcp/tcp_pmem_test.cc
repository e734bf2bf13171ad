// Persistent flush on the target: CPU cache flush (libpmem2's persist
// function) where libpmem2 says the mapping's stores reach persistence at
// cache-line or byte granularity, msync elsewhere. PMEM2_FORCE_GRANULARITY
// stands in for real PMem.
#include <fcntl.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tcp/tcp_mr.h"
#include "tcp_test_util.h"

namespace rpma::prov::tcp_test {
namespace {

using tcp::PmemPersist;

constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite |
                     kAccessRemoteRead | kAccessFlushVisibility |
                     kAccessFlushPersistent;
constexpr size_t kFileSize = 1 << 20;

// A shared mapping of a fresh file of kFileSize bytes.
class FileMapping {
 public:
  FileMapping() {
    char name[] = "/tmp/rpma_tcp_pmem_XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
    if (fd_ < 0 || ftruncate(fd_, kFileSize) != 0) return;
    void* p =
        mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p != MAP_FAILED) addr_ = static_cast<uint8_t*>(p);
  }
  ~FileMapping() {
    if (addr_ != nullptr) munmap(addr_, kFileSize);
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  uint8_t* addr() const { return addr_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
  uint8_t* addr_ = nullptr;
};

class TcpPmemTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const char* g = std::getenv("PMEM2_FORCE_GRANULARITY");
    if (g != nullptr) saved_ = g;
    had_ = g != nullptr;
    if (*GetParam() == '\0') {
      unsetenv("PMEM2_FORCE_GRANULARITY");
    } else {
      setenv("PMEM2_FORCE_GRANULARITY", GetParam(), 1);
    }
  }
  void TearDown() override {
    if (had_) {
      setenv("PMEM2_FORCE_GRANULARITY", saved_.c_str(), 1);
    } else {
      unsetenv("PMEM2_FORCE_GRANULARITY");
    }
  }
  PmemPersist::Method Expected() const {
    std::string g = GetParam();
    if (g == "CACHE_LINE") return PmemPersist::Method::kCpuCache;
    if (g == "BYTE") return PmemPersist::Method::kFence;
    return PmemPersist::Method::kMsync;  // PAGE, or a regular file
  }
  std::string saved_;
  bool had_ = false;
};

TEST_P(TcpPmemTest, PersistentFlushUsesTheMappingsGranularity) {
  FileMapping f;
  ASSERT_NE(f.addr(), nullptr);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Connect());
  std::unique_ptr<Mr> tmr, lmr;
  ASSERT_EQ(p.server.pd->RegMr(f.addr(), kFileSize, kAll, &tmr), 0);
  EXPECT_EQ(static_cast<tcp::TcpMr*>(tmr.get())->persist_method(), Expected());

  std::vector<uint8_t> local(4096);
  for (size_t i = 0; i < local.size(); ++i) local[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(p.client.pd->RegMr(local.data(), local.size(), kAll, &lmr), 0);
  SendWr w;
  w.opcode = Opcode::kWrite;
  w.sge = {local.data(), 4096, lmr->lkey()};
  w.remote_addr = reinterpret_cast<uint64_t>(f.addr()) + 8192 + 100;
  w.rkey = tmr->rkey();
  uint64_t before = PmemPersist::Count(Expected());
  ASSERT_EQ(p.client.qp()->PostSend(w), 0);
  SendWr fl;
  fl.opcode = Opcode::kFlush;
  fl.wr_id = 7;
  fl.signaled = true;
  fl.flush_type = FlushType::kPersistent;
  fl.flush_length = 4096;
  fl.remote_addr = w.remote_addr;
  fl.rkey = tmr->rkey();
  ASSERT_EQ(p.client.qp()->PostSend(fl), 0);
  auto wc = PollN(p.client.cq.get(), 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(PmemPersist::Count(Expected()), before + 1);  // executed that way
  // The bytes are in the file, and nothing around them changed.
  std::vector<uint8_t> back(4096 + 200);
  ASSERT_EQ(pread(f.fd(), back.data(), back.size(), 8192),
            static_cast<ssize_t>(back.size()));
  EXPECT_EQ(std::vector<uint8_t>(back.begin() + 100, back.begin() + 4196),
            local);
  EXPECT_EQ(std::vector<uint8_t>(back.begin(), back.begin() + 100),
            std::vector<uint8_t>(100, 0));
  EXPECT_EQ(std::vector<uint8_t>(back.begin() + 4196, back.end()),
            std::vector<uint8_t>(100, 0));
  tmr.reset();
  lmr.reset();
}

INSTANTIATE_TEST_SUITE_P(Granularity, TcpPmemTest,
                         ::testing::Values("", "PAGE", "CACHE_LINE", "BYTE"),
                         [](const auto& info) {
                           return *info.param ? std::string(info.param)
                                              : std::string("Unset");
                         });

TEST(TcpPmemAnonTest, AnonymousAndPrivateMemoryUseMsync) {
  setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(p.Connect());
  std::vector<uint8_t> heap(1 << 16);
  std::unique_ptr<Mr> mr;
  ASSERT_EQ(p.server.pd->RegMr(heap.data(), heap.size(), kAll, &mr), 0);
  EXPECT_EQ(static_cast<tcp::TcpMr*>(mr.get())->persist_method(),
            PmemPersist::Method::kMsync);
  // Without the persistent flush right nothing is probed.
  std::unique_ptr<Mr> ro;
  ASSERT_EQ(
      p.server.pd->RegMr(heap.data(), heap.size(), kAccessRemoteRead, &ro), 0);
  EXPECT_EQ(static_cast<tcp::TcpMr*>(ro.get())->persist_method(),
            PmemPersist::Method::kMsync);
  unsetenv("PMEM2_FORCE_GRANULARITY");
}

}  // namespace
}  // namespace rpma::prov::tcp_test
