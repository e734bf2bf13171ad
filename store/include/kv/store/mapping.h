// kv::store::Mapping — the pool's bytes: a base address, a size and the
// Persister that makes them durable.
//
// PmemFileMapping (libpmem2 over a file or DAX device) is the production
// implementation; MemoryMapping (heap bytes, any Persister) serves tests,
// the persistence tracker and the fuzzer. Pool owns its Mapping.
// Thread-safety: base()/size()/persister() are immutable after creation.
#ifndef KV_STORE_MAPPING_H_
#define KV_STORE_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kv/status.h"
#include "kv/store/persister.h"

namespace kv::store {

class Mapping {
 public:
  virtual ~Mapping() = default;
  virtual uint8_t* base() = 0;
  virtual size_t size() const = 0;
  virtual Persister* persister() = 0;
  virtual bool read_only() const { return false; }
  // "page" or "cache line" (or "byte"): what a persist costs.
  virtual std::string granularity() const = 0;
  // Makes [offset, offset + len) read as zeros, durably. The default
  // stores zeros and persists them; a file mapping may punch a hole
  // instead (no data written). offset and len are 4 KiB aligned.
  virtual Status Zero(uint64_t offset, uint64_t len) {
    std::memset(base() + offset, 0, len);
    persister()->Persist(base() + offset, len);
    return Status::Ok();
  }
  // Like Zero, but a file mapping also allocates the blocks (writes zeros)
  // so that the first store into each page later needs no block allocation
  // when it is persisted. For small hot ranges (an index); costs a write of
  // the whole range.
  virtual Status ZeroAllocated(uint64_t offset, uint64_t len) {
    return Zero(offset, len);
  }
};

// Heap bytes (64-byte aligned) with a caller-chosen Persister. With a null
// persister, Persist() is a no-op (the bytes are as durable as the heap).
class MemoryMapping : public Mapping {
 public:
  // Copies `image` (the pool image) into a new 64-byte aligned buffer.
  static std::unique_ptr<MemoryMapping> FromImage(
      const std::vector<uint8_t>& image, std::shared_ptr<Persister> persister);
  // A zero-filled buffer of `size` bytes.
  static std::unique_ptr<MemoryMapping> Zeroed(
      size_t size, std::shared_ptr<Persister> persister);

  uint8_t* base() override { return bytes_.get(); }
  size_t size() const override { return size_; }
  Persister* persister() override { return persister_.get(); }
  std::string granularity() const override { return "memory"; }

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  MemoryMapping(size_t size, std::shared_ptr<Persister> persister);

  std::unique_ptr<uint8_t, FreeDeleter> bytes_;
  size_t size_;
  std::shared_ptr<Persister> persister_;
};

}  // namespace kv::store

#endif  // KV_STORE_MAPPING_H_
