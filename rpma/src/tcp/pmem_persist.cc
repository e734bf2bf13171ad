// Persistent flush method of a registration; see pmem_persist.h.
#include "tcp/pmem_persist.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "log_internal.h"

namespace rpma::prov::tcp {
namespace {

std::atomic<uint64_t> g_count[3];

void Counted(PmemPersist::Method m) {
  g_count[static_cast<int>(m)].fetch_add(1, std::memory_order_relaxed);
}

struct Mapping {
  uintptr_t start = 0, end = 0;
  bool shared = false;
  std::string path;
};

// The /proc/self/maps entry holding addr; false if none.
bool FindMapping(uintptr_t addr, Mapping* out) {
  std::ifstream f("/proc/self/maps");
  std::string line;
  while (std::getline(f, line)) {
    uintptr_t s, e;
    char perms[8] = {};
    unsigned long long off;
    int path_at = 0;
    if (std::sscanf(line.c_str(),
                    "%" SCNxPTR "-%" SCNxPTR " %7s %llx %*s %*s %n", &s, &e,
                    perms, &off, &path_at) < 4) {
      continue;
    }
    if (addr < s || addr >= e) continue;
    out->start = s;
    out->end = e;
    out->shared = perms[3] == 's';
    if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) {
      out->path = line.substr(static_cast<size_t>(path_at));
    }
    return true;
  }
  return false;
}

// True when the mapping starting at `start` has VmFlags "sf" (MAP_SYNC).
bool IsMapSync(uintptr_t start) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(f, line)) {
    uintptr_t s, e;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &s, &e) == 2 &&
        line.find('-') < line.find(' ')) {
      in = s == start;
      continue;
    }
    if (in && line.rfind("VmFlags:", 0) == 0) {
      return line.find(" sf") != std::string::npos;
    }
  }
  return false;
}

}  // namespace

std::shared_ptr<const PmemPersist> PmemPersist::Probe(const void* addr,
                                                      size_t len) {
  std::shared_ptr<PmemPersist> p(new PmemPersist());
  Mapping m;
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  if (len == 0 || !FindMapping(a, &m) || !m.shared || m.path.empty() ||
      m.path[0] != '/' || len > m.end - a) {
    return p;  // anonymous, private, or over several mappings: msync
  }
  int fd = open(m.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return p;
  struct pmem2_source* src = nullptr;
  struct pmem2_config* cfg = nullptr;
  struct pmem2_map* map = nullptr;
  size_t align = 0, size = 0;
  if (pmem2_source_from_fd(&src, fd) == 0 &&
      pmem2_source_alignment(src, &align) == 0 &&
      pmem2_source_size(src, &size) == 0 && size >= align &&
      pmem2_config_new(&cfg) == 0 &&
      pmem2_config_set_required_store_granularity(
          cfg, PMEM2_GRANULARITY_PAGE) == 0 &&
      pmem2_config_set_length(cfg, align) == 0) {
    if (pmem2_map_new(&map, cfg, src) != 0) map = nullptr;
  }
  if (cfg != nullptr) pmem2_config_delete(&cfg);
  if (src != nullptr) pmem2_source_delete(&src);
  close(fd);
  if (map == nullptr) return p;
  enum pmem2_granularity g = pmem2_map_get_store_granularity(map);
  const char* forced = std::getenv("PMEM2_FORCE_GRANULARITY");
  bool trust = (forced != nullptr && *forced != '\0') || IsMapSync(m.start);
  if (g == PMEM2_GRANULARITY_PAGE || !trust) {
    pmem2_map_delete(&map);
    return p;
  }
  p->map_ = map;
  p->persist_ = pmem2_get_persist_fn(map);
  p->method_ = g == PMEM2_GRANULARITY_BYTE ? Method::kFence : Method::kCpuCache;
  RPMA_LOG_INFO("tcp: persistent flushes of %s use CPU cache flushes",
                m.path.c_str());
  return p;
}

PmemPersist::~PmemPersist() {
  if (map_ != nullptr) pmem2_map_delete(&map_);
}

int PmemPersist::Persist(const void* addr, size_t len) const {
  if (len == 0) return 0;
  if (persist_ != nullptr) {
    persist_(addr, len);
    Counted(method_);
    return 0;
  }
  return Msync(addr, len);
}

uint64_t PmemPersist::Count(Method m) {
  return g_count[static_cast<int>(m)].load(std::memory_order_relaxed);
}

int PmemPersist::Msync(const void* addr, size_t len) {
  // msync of the page-aligned range. On a DAX mapping the kernel also
  // flushes CPU caches; on anonymous memory it is harmless.
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t start = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  if (msync(reinterpret_cast<void*>(start), end - start, MS_SYNC) != 0) {
    return errno;
  }
  Counted(Method::kMsync);
  return 0;
}

}  // namespace rpma::prov::tcp
