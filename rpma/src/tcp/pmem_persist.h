// How the target makes a persistent FLUSH of a registered range durable:
// CPU cache flush + fence (libpmem2's persist function) where the range
// lies in a mapping whose stores reach persistence that way (DAX with
// MAP_SYNC, or eADR), msync(MS_SYNC) elsewhere (page cache, anonymous
// memory).
//
// Detection, once per registration: the range must lie in one shared
// file mapping (/proc/self/maps); libpmem2 maps one aligned piece of that
// file and reports its store granularity (it honours
// PMEM2_FORCE_GRANULARITY, so both paths run on a machine without PMem).
// PAGE means msync. CACHE_LINE or BYTE mean libpmem2's persist function,
// applied to the application's own addresses (it flushes by virtual
// address, the same physical lines) — but only when the application's
// mapping is MAP_SYNC itself (VmFlags "sf" in /proc/self/smaps): without
// it a page fault's file-system metadata is durable only through msync.
// With PMEM2_FORCE_GRANULARITY set, libpmem2's answer is taken as is.
//
// Thread-safety: a PmemPersist is immutable after Probe(); Persist() may
// run on any thread.
#ifndef RPMA_TCP_PMEM_PERSIST_H_
#define RPMA_TCP_PMEM_PERSIST_H_

#include <cstddef>
#include <cstdint>
#include <memory>

struct pmem2_map;

namespace rpma::prov::tcp {

class PmemPersist {
 public:
  enum class Method {
    kMsync,     // msync(MS_SYNC) of the page-aligned range
    kCpuCache,  // libpmem2 persist: cache-line flush + fence
    kFence,     // libpmem2 persist at byte granularity (eADR): a fence
  };

  // Chooses the method for [addr, addr + len). Never fails: anything it
  // cannot establish means msync.
  static std::shared_ptr<const PmemPersist> Probe(const void* addr, size_t len);
  ~PmemPersist();

  Method method() const { return method_; }
  // Makes [addr, addr + len) durable. Returns 0 or an errno (msync's).
  int Persist(const void* addr, size_t len) const;
  // msync(MS_SYNC) of the page-aligned range around [addr, addr + len).
  static int Msync(const void* addr, size_t len);
  // Persists made so far in this process with `m` (tests).
  static uint64_t Count(Method m);

 private:
  PmemPersist() = default;
  Method method_ = Method::kMsync;
  struct pmem2_map* map_ = nullptr;  // keeps the persist function's map
  void (*persist_)(const void*, size_t) = nullptr;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_PMEM_PERSIST_H_
