#include "kv/store/mapping.h"

#include <cstdlib>
#include <cstring>

namespace kv::store {

void MemoryMapping::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

MemoryMapping::MemoryMapping(size_t size, std::shared_ptr<Persister> persister)
    : size_(size), persister_(std::move(persister)) {
  // Round the allocation up: aligned_alloc wants a multiple of the alignment.
  const size_t alloc = (size + 63) / 64 * 64;
  bytes_.reset(
      static_cast<uint8_t*>(std::aligned_alloc(64, alloc ? alloc : 64)));
  if (!persister_) {
    struct NoopPersister : Persister {
      void Persist(const void*, size_t) override {}
    };
    persister_ = std::make_shared<NoopPersister>();
  }
}

std::unique_ptr<MemoryMapping> MemoryMapping::FromImage(
    const std::vector<uint8_t>& image, std::shared_ptr<Persister> persister) {
  std::unique_ptr<MemoryMapping> m(
      new MemoryMapping(image.size(), std::move(persister)));
  if (!image.empty()) std::memcpy(m->base(), image.data(), image.size());
  return m;
}

std::unique_ptr<MemoryMapping> MemoryMapping::Zeroed(
    size_t size, std::shared_ptr<Persister> persister) {
  std::unique_ptr<MemoryMapping> m(
      new MemoryMapping(size, std::move(persister)));
  std::memset(m->base(), 0, size);
  return m;
}

}  // namespace kv::store
