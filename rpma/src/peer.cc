// rpma_peer_new / rpma_peer_delete and the usage -> access mapping.

#include "peer.h"

#include <new>

#include "export.h"
#include "log_internal.h"
#include "provider/device_registry.h"

namespace rpma {

int UsageToAccess(const rpma_peer* peer, int usage) {
  using prov::kAccessFlushPersistent;
  using prov::kAccessFlushVisibility;
  using prov::kAccessLocalWrite;
  using prov::kAccessRemoteRead;
  using prov::kAccessRemoteWrite;
  int access = 0;
  if (usage & RPMA_MR_USAGE_READ_SRC) access |= kAccessRemoteRead;
  if (usage & (RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY |
               RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT)) {
    if (peer->caps.native_flush) {
      if (usage & RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY)
        access |= kAccessFlushVisibility;
      if (usage & RPMA_MR_USAGE_FLUSH_TYPE_PERSISTENT)
        access |= kAccessFlushPersistent;
    } else {
      access |= kAccessRemoteRead;
    }
  }
  if (usage & RPMA_MR_USAGE_READ_DST) {
    access |= kAccessLocalWrite;
    // iWARP places RDMA READ responses as remote writes (librpma grants
    // remote write on iWARP only; DeviceCaps::iwarp).
    if (peer->caps.iwarp) access |= kAccessRemoteWrite;
  }
  if (usage & RPMA_MR_USAGE_WRITE_SRC) access |= kAccessLocalWrite;
  if (usage & RPMA_MR_USAGE_WRITE_DST)
    access |= kAccessRemoteWrite | kAccessLocalWrite;
  if (usage & RPMA_MR_USAGE_RECV) access |= kAccessLocalWrite;
  return access;  // RPMA_MR_USAGE_SEND needs nothing
}

}  // namespace rpma

RPMA_EXPORT int rpma_peer_new(struct ibv_context* ibv_ctx,
                              struct rpma_peer** peer_ptr) {
  if (ibv_ctx == nullptr || peer_ptr == nullptr) return RPMA_E_INVAL;
  rpma::prov::Device* device = rpma::prov::DeviceFromContext(ibv_ctx);
  if (device == nullptr) {
    RPMA_LOG_ERROR("unknown device context %p", static_cast<void*>(ibv_ctx));
    return RPMA_E_PROVIDER;
  }
  rpma::prov::DeviceCaps caps = device->caps();
  if (!caps.native_atomic_write)
    RPMA_LOG_INFO(
        "native atomic write is not supported, an ordinary RDMA write will be "
        "used instead");
  if (!caps.native_flush)
    RPMA_LOG_INFO(
        "native flush is not supported, an ordinary RDMA read will be used "
        "instead");

  std::unique_ptr<rpma::prov::Pd> pd;
  int rc = device->AllocPd(&pd);
  if (rc != 0) {
    return RPMA_PROVIDER_FAILED_NOMEM(rc, "allocating a protection domain");
  }
  auto* peer = new (std::nothrow) rpma_peer();
  if (peer == nullptr) return RPMA_E_NOMEM;  // pd released by its owner
  peer->device = device;
  peer->caps = caps;
  peer->pd = std::move(pd);
  *peer_ptr = peer;
  return 0;
}

RPMA_EXPORT int rpma_peer_delete(struct rpma_peer** peer_ptr) {
  if (peer_ptr == nullptr) return RPMA_E_INVAL;
  rpma_peer* peer = *peer_ptr;
  if (peer == nullptr) return 0;
  *peer_ptr = nullptr;
  int ret = 0;
  if (peer->live_objects->load() != 0) {
    RPMA_LOG_ERROR(
        "deleting a peer that still has %d memory regions, endpoints, "
        "requests, connections or SRQs; its protection domain is leaked",
        peer->live_objects->load());
    (void)peer->pd.release();  // as a failed ibv_dealloc_pd: left alive
    ret = RPMA_E_PROVIDER;
  }
  delete peer;
  return ret;
}
