// Device discovery for the verbs provider: VerbsGetDevice() finds the RDMA
// device that owns an address the way librpma's rpma_utils_get_ibv_context()
// does (rdma_getaddrinfo + a temporary synchronous CM id, bind for LOCAL,
// resolve with a 1000 ms timeout for REMOTE), and VerbsDeviceForContext()
// wraps an application-opened context.
//
// SelectDevice() calls VerbsGetDevice() first on every lookup in auto mode,
// so the no-device answer must be quick and silent: a host without RDMA
// devices is detected with ibv_get_device_list() before librdmacm is
// touched (librdmacm would otherwise try to open /dev/infiniband/rdma_cm).

#include "verbs/verbs_device.h"

#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <new>

#include "provider/device_registry.h"
#include "verbs/verbs_mapping.h"
#include "verbs/verbs_pd.h"

namespace rpma::prov {
namespace verbs {
namespace {

// librpma's fixed timeout for resolving a REMOTE address.
constexpr int kResolveTimeoutMs = 1000;

}  // namespace

int ContextForAddress(const char* addr, bool local, ibv_context** out) {
  rdma_addrinfo* res = nullptr;
  int rc = ResolveAddrInfo(addr, nullptr, /*passive=*/local, &res);
  // Anything but a bad name or no memory means librdmacm cannot serve the
  // address (no rdma_cm device, module not loaded): no verbs device.
  if (rc == -EINVAL || rc == -ENOMEM) return rc;
  if (rc != 0) return -ENODEV;
  const sockaddr* sa = local ? res->ai_src_addr : res->ai_dst_addr;
  if (sa == nullptr || IsLoopback(sa)) {
    rdma_freeaddrinfo(res);
    return -ENODEV;
  }
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0) {
    const int e = errno;
    rdma_freeaddrinfo(res);
    return e == ENOMEM ? -ENOMEM : -ENODEV;
  }
  if (local) {
    rc = rdma_bind_addr(id, res->ai_src_addr);
  } else {
    rc = rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr,
                           kResolveTimeoutMs);
  }
  const int e = errno;
  ibv_context* ctx = rc == 0 ? id->verbs : nullptr;
  rdma_destroy_id(id);
  rdma_freeaddrinfo(res);
  // A bind/resolve failure means no RDMA device serves the address (it is
  // not local, or only reachable through a plain netdev): let auto mode
  // fall back to tcp.
  if (rc != 0 && e == ENOMEM) return -ENOMEM;
  if (ctx == nullptr) return -ENODEV;
  *out = ctx;
  return 0;
}

bool AnyRdmaDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return false;
  ibv_free_device_list(list);
  return n > 0;
}

VerbsDevice* VerbsDevice::ForContext(ibv_context* ctx) {
  if (ctx == nullptr) return nullptr;
  // Keyed by the context's address: one wrapper per context, whether the
  // application or librdmacm opened it (neither is ever closed here).
  char key[2 * sizeof(void*) + 3];
  std::snprintf(key, sizeof(key), "%p", static_cast<void*>(ctx));
  Device* dev = DeviceRegistry::Instance().Intern(
      "verbs", key, [ctx](int) -> std::unique_ptr<Device> {
        ibv_device_attr_ex attr = {};
        if (ibv_query_device_ex(ctx, nullptr, &attr) != 0) return nullptr;
        const ibv_transport_type transport = ctx->device != nullptr
                                                 ? ctx->device->transport_type
                                                 : IBV_TRANSPORT_UNKNOWN;
        return std::unique_ptr<Device>(new (std::nothrow) VerbsDevice(
            ctx, CapsFromAttr(attr, transport, NativeAtomicWriteAllowed())));
      });
  return static_cast<VerbsDevice*>(dev);
}

int VerbsDevice::AllocPd(std::unique_ptr<Pd>* out) {
  errno = 0;
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  if (pd == nullptr) return NegErrno(0, errno);
  auto* wrapper = new (std::nothrow) VerbsPd(this, pd);
  if (wrapper == nullptr) {
    ibv_dealloc_pd(pd);
    return -ENOMEM;
  }
  out->reset(wrapper);
  return 0;
}

}  // namespace verbs

int VerbsGetDevice(const char* addr, bool local, Device** out) {
  if (addr == nullptr || out == nullptr) return -EINVAL;
  if (!verbs::AnyRdmaDevice()) return -ENODEV;
  ibv_context* ctx = nullptr;
  int rc = verbs::ContextForAddress(addr, local, &ctx);
  if (rc != 0) return rc;
  verbs::VerbsDevice* dev = verbs::VerbsDevice::ForContext(ctx);
  if (dev == nullptr) return -ENODEV;
  *out = dev;
  return 0;
}

bool VerbsHasDevices() { return verbs::AnyRdmaDevice(); }

Device* VerbsDeviceForContext(ibv_context* ctx) {
  return verbs::VerbsDevice::ForContext(ctx);
}

}  // namespace rpma::prov
