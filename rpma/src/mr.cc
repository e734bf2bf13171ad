// rpma_mr_*: local registrations, their descriptors and remote regions.

#include "mr.h"

#include <new>

#include "export.h"
#include "log_internal.h"

namespace {

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

RPMA_EXPORT int rpma_mr_reg(struct rpma_peer* peer, void* ptr, size_t size,
                            int usage, struct rpma_mr_local** mr_ptr) {
  if (peer == nullptr || ptr == nullptr || size == 0 || mr_ptr == nullptr)
    return RPMA_E_INVAL;
  if (usage == 0 || (usage & ~rpma::kMrUsageAll) != 0) return RPMA_E_INVAL;
  auto* mr = new (std::nothrow) rpma_mr_local(peer);
  if (mr == nullptr) return RPMA_E_NOMEM;
  int rc =
      peer->pd->RegMr(ptr, size, rpma::UsageToAccess(peer, usage), &mr->mr);
  if (rc != 0) {
    delete mr;
    return RPMA_PROVIDER_FAILED(rc, "registering %zu bytes at %p", size, ptr);
  }
  mr->usage = usage;
  *mr_ptr = mr;
  return 0;
}

RPMA_EXPORT int rpma_mr_dereg(struct rpma_mr_local** mr_ptr) {
  if (mr_ptr == nullptr) return RPMA_E_INVAL;
  delete *mr_ptr;  // provider deregistration cannot fail
  *mr_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_mr_get_descriptor(const struct rpma_mr_local* mr,
                                       void* desc) {
  if (mr == nullptr || desc == nullptr) return RPMA_E_INVAL;
  auto* p = static_cast<uint8_t*>(desc);
  PutLe(p, reinterpret_cast<uintptr_t>(mr->mr->addr()), 8);
  PutLe(p + 8, mr->mr->length(), 8);
  PutLe(p + 16, mr->mr->rkey(), 4);
  p[20] = static_cast<uint8_t>(mr->usage);
  return 0;
}

RPMA_EXPORT int rpma_mr_get_descriptor_size(const struct rpma_mr_local* mr,
                                            size_t* desc_size) {
  if (mr == nullptr || desc_size == nullptr) return RPMA_E_INVAL;
  *desc_size = rpma::kMrDescriptorSize;
  return 0;
}

RPMA_EXPORT int rpma_mr_remote_from_descriptor(const void* desc,
                                               size_t desc_size,
                                               struct rpma_mr_remote** mr_ptr) {
  if (desc == nullptr || mr_ptr == nullptr) return RPMA_E_INVAL;
  if (desc_size < rpma::kMrDescriptorSize) {
    RPMA_LOG_ERROR("memory descriptor of %zu bytes, %zu expected", desc_size,
                   rpma::kMrDescriptorSize);
    return RPMA_E_INVAL;
  }
  auto* p = static_cast<const uint8_t*>(desc);
  if (p[20] == 0) {
    RPMA_LOG_ERROR("memory descriptor with no usage");
    return RPMA_E_INVAL;
  }
  auto* mr = new (std::nothrow) rpma_mr_remote();
  if (mr == nullptr) return RPMA_E_NOMEM;
  mr->raddr = GetLe(p, 8);
  mr->size = GetLe(p + 8, 8);
  mr->rkey = static_cast<uint32_t>(GetLe(p + 16, 4));
  mr->usage = p[20];
  RPMA_LOG_DEBUG(
      "new remote region: addr 0x%llx size %llu rkey 0x%x usage 0x%x",
      static_cast<unsigned long long>(mr->raddr),
      static_cast<unsigned long long>(mr->size), mr->rkey, mr->usage);
  *mr_ptr = mr;
  return 0;
}

RPMA_EXPORT int rpma_mr_get_ptr(const struct rpma_mr_local* mr, void** ptr) {
  if (mr == nullptr || ptr == nullptr) return RPMA_E_INVAL;
  *ptr = mr->mr->addr();
  return 0;
}

RPMA_EXPORT int rpma_mr_get_size(const struct rpma_mr_local* mr, size_t* size) {
  if (mr == nullptr || size == nullptr) return RPMA_E_INVAL;
  *size = mr->mr->length();
  return 0;
}

RPMA_EXPORT int rpma_mr_remote_get_size(const struct rpma_mr_remote* mr,
                                        size_t* size) {
  if (mr == nullptr || size == nullptr) return RPMA_E_INVAL;
  *size = mr->size;
  return 0;
}

RPMA_EXPORT int rpma_mr_remote_get_flush_type(const struct rpma_mr_remote* mr,
                                              int* flush_type) {
  if (mr == nullptr || flush_type == nullptr) return RPMA_E_INVAL;
  *flush_type = mr->usage & (RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT |
                             RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY);
  return 0;
}

RPMA_EXPORT int rpma_mr_remote_delete(struct rpma_mr_remote** mr_ptr) {
  if (mr_ptr == nullptr) return RPMA_E_INVAL;
  delete *mr_ptr;
  *mr_ptr = nullptr;
  return 0;
}

RPMA_EXPORT int rpma_mr_advise(struct rpma_mr_local* mr, size_t offset,
                               size_t len, int advice, uint32_t flags) {
  // librpma dereferences mr unchecked; a NULL is refused here instead.
  (void)offset, (void)len, (void)advice, (void)flags;
  if (mr == nullptr) return RPMA_E_INVAL;
  // The provider interface has no ibv_advise_mr (neither provider pages
  // memory on demand): as librpma built without IBV_ADVISE_MR_SUPPORTED.
  return RPMA_E_NOSUPP;
}
