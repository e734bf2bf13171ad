// kv::store::PmemFileMapping — a pool file or DAX device mapped with
// libpmem2.
//
// The mapping asks libpmem2 for page store granularity, so it works on any
// regular file (persist = msync of the touched pages) and on DAX (persist =
// cache-line flush + fence); PMEM2_FORCE_GRANULARITY=CACHE_LINE in the
// environment makes libpmem2 use cache-line flushes on a regular file too
// (fast, durable only against process crashes — a benchmark mode).
// Thread-safety: immutable after Open/Create; Persist is thread-safe.
#ifndef KV_STORE_PMEM_FILE_MAPPING_H_
#define KV_STORE_PMEM_FILE_MAPPING_H_

#include <memory>
#include <string>
#include <vector>

#include "kv/status.h"
#include "kv/store/mapping.h"

namespace kv::store {

class PmemFileMapping : public Mapping {
 public:
  // Creates `path` (must not exist) as a sparse file of `size` bytes and
  // maps it. Errors: invalid_argument (exists), io_error (open, ftruncate,
  // libpmem2 — the message carries libpmem2's).
  static Result<std::unique_ptr<PmemFileMapping>> Create(
      const std::string& path, uint64_t size);
  // Maps an existing file or device, holding an flock on it (exclusive,
  // or shared when read_only) for the mapping's lifetime. Errors:
  // not_found (no such file), busy (another process has it open for
  // writing, or any process when opening for writing), permission_denied,
  // io_error (libpmem2 refused it).
  // `live_view` (read_only only): a pool held for writing is mapped
  // anyway, without the lock; held_by() then names the holder.
  static Result<std::unique_ptr<PmemFileMapping>> Open(const std::string& path,
                                                       bool read_only,
                                                       bool live_view = false);
  // Who holds the pool for writing, for a live view ("" otherwise).
  const std::string& held_by() const;
  ~PmemFileMapping() override;

  uint8_t* base() override;
  size_t size() const override;
  Persister* persister() override;
  bool read_only() const override { return read_only_; }
  std::string granularity() const override;
  // On a regular file: punches a hole (the blocks are released and read
  // back as zeros) and fsyncs, falling back to storing zeros where the
  // file system or device cannot punch holes.
  Status Zero(uint64_t offset, uint64_t len) override;
  Status ZeroAllocated(uint64_t offset, uint64_t len) override;

  // Tests: one call the persister made to libpmem2.
  struct PersistCall {
    enum Kind { kPersist, kFlush, kDrain } kind;
    const void* addr;  // nullptr for kDrain
    size_t len;
  };
  // Tests: from now on the persister appends each persist (msync on a
  // page-granularity file), flush and drain call it makes to *log, just
  // before making it; nullptr stops. *log must outlive the recording.
  void RecordPersistCallsForTesting(std::vector<PersistCall>* log);

 private:
  class Impl;
  explicit PmemFileMapping(std::unique_ptr<Impl> impl, bool read_only);
  std::unique_ptr<Impl> impl_;
  bool read_only_;
};

}  // namespace kv::store

#endif  // KV_STORE_PMEM_FILE_MAPPING_H_
