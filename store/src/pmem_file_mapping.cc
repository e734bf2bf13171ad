#include "kv/store/pmem_file_mapping.h"

#include <fcntl.h>
#include <libpmem2.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "pool_lock_holders.h"

namespace kv::store {
namespace {

std::string Pmem2Error(const std::string& what) {
  const char* msg = pmem2_errormsg();
  return what + ": " + (msg && *msg ? msg : "libpmem2 error");
}

class Pmem2Persister : public Persister {
 public:
  using Call = PmemFileMapping::PersistCall;

  explicit Pmem2Persister(pmem2_map* map)
      : persist_(pmem2_get_persist_fn(map)),
        flush_(pmem2_get_flush_fn(map)),
        drain_(pmem2_get_drain_fn(map)),
        page_(pmem2_map_get_store_granularity(map) == PMEM2_GRANULARITY_PAGE) {}
  void Persist(const void* addr, size_t len) override { DoPersist(addr, len); }

  void PersistRanges(const Range* ranges, size_t n) override {
    if (n == 0) return;
    if (page_) {
      // One msync over the span: the kernel writes only the dirty pages in
      // it (the ranges, plus whatever else is dirty in between, which is
      // harmless) and pays for one device flush instead of n.
      const auto* lo = static_cast<const uint8_t*>(ranges[0].addr);
      const uint8_t* hi = lo + ranges[0].len;
      for (size_t i = 1; i < n; i++) {
        const auto* p = static_cast<const uint8_t*>(ranges[i].addr);
        lo = std::min(lo, p);
        hi = std::max(hi, p + ranges[i].len);
      }
      DoPersist(lo, static_cast<size_t>(hi - lo));
      return;
    }
    // Cache lines: flush each range, then one fence (drain) orders them
    // all before the call returns.
    for (size_t i = 0; i < n; i++) DoFlush(ranges[i].addr, ranges[i].len);
    DoDrain();
  }

  void Record(std::vector<Call>* log) {
    std::lock_guard<std::mutex> lock(log_mu_);
    log_.store(log, std::memory_order_release);
  }

 private:
  // The three libpmem2 calls, each noted first when a test records them.
  void DoPersist(const void* addr, size_t len) {
    Note({Call::kPersist, addr, len});
    persist_(addr, len);
  }
  void DoFlush(const void* addr, size_t len) {
    Note({Call::kFlush, addr, len});
    flush_(addr, len);
  }
  void DoDrain() {
    Note({Call::kDrain, nullptr, 0});
    drain_();
  }
  void Note(const Call& c) {
    if (log_.load(std::memory_order_acquire) == nullptr) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    if (auto* log = log_.load(std::memory_order_relaxed)) log->push_back(c);
  }

  pmem2_persist_fn persist_;
  pmem2_flush_fn flush_;
  pmem2_drain_fn drain_;
  bool page_;
  std::mutex log_mu_;
  std::atomic<std::vector<Call>*> log_{nullptr};  // tests only
};

}  // namespace

class PmemFileMapping::Impl {
 public:
  ~Impl() {
    if (map_ != nullptr) pmem2_map_delete(&map_);
    if (fd_ >= 0) close(fd_);
  }
  int fd_ = -1;
  pmem2_map* map_ = nullptr;
  std::unique_ptr<Pmem2Persister> persister_;
};

namespace {

// Maps fd with page granularity (the weakest libpmem2 offers, so any file
// works); libpmem2 itself honours PMEM2_FORCE_GRANULARITY.
Status MapFd(int fd, bool read_only, const std::string& path, pmem2_map** out) {
  pmem2_source* src = nullptr;
  if (pmem2_source_from_fd(&src, fd) != 0) {
    return Status::IoError(Pmem2Error(path));
  }
  pmem2_config* cfg = nullptr;
  if (pmem2_config_new(&cfg) != 0) {
    pmem2_source_delete(&src);
    return Status::IoError(Pmem2Error("pmem2_config_new"));
  }
  Status st;
  if (pmem2_config_set_required_store_granularity(
          cfg, PMEM2_GRANULARITY_PAGE) != 0) {
    st = Status::IoError(Pmem2Error("pmem2 granularity"));
  } else if (read_only &&
             pmem2_config_set_protection(cfg, PMEM2_PROT_READ) != 0) {
    st = Status::IoError(Pmem2Error("pmem2 protection"));
  } else if (pmem2_map_new(out, cfg, src) != 0) {
    st = Status::IoError(Pmem2Error("mapping " + path));
  }
  pmem2_config_delete(&cfg);
  pmem2_source_delete(&src);
  return st;
}

// A page-granularity pool persists by msync, which writes back whole
// page-cache folios. Readahead on a fault builds large folios, so a put
// that dirties 64 bytes could make its msync write back up to megabytes:
// measured on ext4, 540 us instead of 125 us per put
// (kvbench_flush_floor). Faults without readahead get single pages; and
// the clean pages an earlier reader cached (possibly as large folios) are
// dropped at a writable open (dirty ones stay, harmlessly). A server's
// reads of the pool are random anyway (hash index, remote gets).
void PreferSmallFolios(int fd, pmem2_map* map, bool dropped_cached) {
  if (pmem2_map_get_store_granularity(map) != PMEM2_GRANULARITY_PAGE) return;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) return;
  if (dropped_cached) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  (void)madvise(pmem2_map_get_address(map), pmem2_map_get_size(map),
                MADV_RANDOM);
}

Status ErrnoStatus(const std::string& what, int err) {
  std::string m = what + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(m);
  if (err == EACCES || err == EPERM || err == EROFS) {
    return Status::PermissionDenied(m);
  }
  if (err == EEXIST) return Status::InvalidArgument(m);
  if (err == ENOSPC) return Status::NoSpace(m);
  return Status::IoError(m);
}

// One writer process per pool: an exclusive flock for read-write, shared
// for read-only (released by the kernel when the process dies).
Status LockPool(int fd, bool read_only, const std::string& path) {
  if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0) {
    return Status::Ok();
  }
  if (errno == EWOULDBLOCK) {
    return Status::Busy(path + " is " + PoolLockHolders(fd) +
                        "; stop it first");
  }
  return ErrnoStatus("locking " + path, errno);
}

}  // namespace

PmemFileMapping::PmemFileMapping(std::unique_ptr<Impl> impl, bool read_only)
    : impl_(std::move(impl)), read_only_(read_only) {}
PmemFileMapping::~PmemFileMapping() = default;

Result<std::unique_ptr<PmemFileMapping>> PmemFileMapping::Create(
    const std::string& path, uint64_t size) {
  auto impl = std::make_unique<Impl>();
  impl->fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (impl->fd_ < 0) return ErrnoStatus("creating " + path, errno);
  KV_RETURN_IF_ERROR(LockPool(impl->fd_, false, path));
  // ftruncate leaves a sparse file: nothing is zeroed up front.
  if (ftruncate(impl->fd_, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return ErrnoStatus("sizing " + path, err);
  }
  Status st = MapFd(impl->fd_, false, path, &impl->map_);
  if (!st.ok()) {
    unlink(path.c_str());
    return st;
  }
  PreferSmallFolios(impl->fd_, impl->map_, false);
  impl->persister_ = std::make_unique<Pmem2Persister>(impl->map_);
  return std::unique_ptr<PmemFileMapping>(
      new PmemFileMapping(std::move(impl), false));
}

Result<std::unique_ptr<PmemFileMapping>> PmemFileMapping::Open(
    const std::string& path, bool read_only) {
  auto impl = std::make_unique<Impl>();
  impl->fd_ = open(path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  struct stat sb;
  if ((impl->fd_ < 0 && errno == EISDIR) ||
      (impl->fd_ >= 0 && fstat(impl->fd_, &sb) == 0 && S_ISDIR(sb.st_mode))) {
    return Status::InvalidArgument(path +
                                   " is a directory, not a pool file (give "
                                   "the pool file's path)");
  }
  if (impl->fd_ < 0) return ErrnoStatus("opening " + path, errno);
  KV_RETURN_IF_ERROR(LockPool(impl->fd_, read_only, path));
  if (fstat(impl->fd_, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) {
    return Status::Corruption(path + ": empty file, not a pool");
  }
  KV_RETURN_IF_ERROR(MapFd(impl->fd_, read_only, path, &impl->map_));
  // A read-only open never msyncs; its (offline, often sequential)
  // reads keep readahead.
  if (!read_only) PreferSmallFolios(impl->fd_, impl->map_, true);
  impl->persister_ = std::make_unique<Pmem2Persister>(impl->map_);
  return std::unique_ptr<PmemFileMapping>(
      new PmemFileMapping(std::move(impl), read_only));
}

uint8_t* PmemFileMapping::base() {
  return static_cast<uint8_t*>(pmem2_map_get_address(impl_->map_));
}
size_t PmemFileMapping::size() const { return pmem2_map_get_size(impl_->map_); }
Persister* PmemFileMapping::persister() { return impl_->persister_.get(); }

void PmemFileMapping::RecordPersistCallsForTesting(
    std::vector<PersistCall>* log) {
  impl_->persister_->Record(log);
}

Status PmemFileMapping::Zero(uint64_t offset, uint64_t len) {
  // Page granularity (a regular file): storing zeros through the mapping
  // would allocate and write every block (slow for a large index, and on
  // ext4 it measurably slows every later msync of the file); a hole costs
  // one metadata update and the fsync that makes it durable. With cache-line
  // flushes nothing is msync'ed, so that fsync would write back everything
  // the pool has dirtied (milliseconds per segment grant when the cache-line
  // mode is forced on a regular file); there zeros are stored and flushed.
  if (pmem2_map_get_store_granularity(impl_->map_) != PMEM2_GRANULARITY_PAGE) {
    return Mapping::Zero(offset, len);
  }
  struct stat sb;
  if (fstat(impl_->fd_, &sb) == 0 && S_ISREG(sb.st_mode) &&
      fallocate(impl_->fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                static_cast<off_t>(offset), static_cast<off_t>(len)) == 0) {
    if (fsync(impl_->fd_) != 0) {
      return Status::IoError(std::string("fsync after punching a hole: ") +
                             std::strerror(errno));
    }
    return Status::Ok();
  }
  return Mapping::Zero(offset, len);
}

Status PmemFileMapping::ZeroAllocated(uint64_t offset, uint64_t len) {
  struct stat sb;
  if (pmem2_map_get_store_granularity(impl_->map_) != PMEM2_GRANULARITY_PAGE ||
      fstat(impl_->fd_, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    return Zero(offset, len);
  }
  // Zeros written with pwrite, made durable, then dropped from the page
  // cache: on ext4 a page that write() left cached made every later msync
  // of it ~5x slower (329 vs 57 us measured), while a page whose block is
  // still a hole pays a block allocation at its first msync (82 us).
  static const std::vector<char> zeros(1 << 20, 0);
  for (uint64_t done = 0; done < len;) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(zeros.size(), len - done));
    const ssize_t w =
        pwrite(impl_->fd_, zeros.data(), n, static_cast<off_t>(offset + done));
    if (w <= 0) {
      return Status::IoError(std::string("writing zeros: ") +
                             std::strerror(w < 0 ? errno : EIO));
    }
    done += static_cast<uint64_t>(w);
  }
  if (fdatasync(impl_->fd_) != 0) {
    return Status::IoError(std::string("fdatasync after writing zeros: ") +
                           std::strerror(errno));
  }
  (void)posix_fadvise(impl_->fd_, static_cast<off_t>(offset),
                      static_cast<off_t>(len), POSIX_FADV_DONTNEED);
  return Status::Ok();
}

std::string PmemFileMapping::granularity() const {
  switch (pmem2_map_get_store_granularity(impl_->map_)) {
    case PMEM2_GRANULARITY_BYTE:
      return "byte";
    case PMEM2_GRANULARITY_CACHE_LINE:
      return "cache line";
    case PMEM2_GRANULARITY_PAGE:
      return "page";
  }
  return "unknown";
}

}  // namespace kv::store
