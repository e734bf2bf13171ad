// The verbs provider's Device: one wrapped ibv_context.
//
// Contexts come from librdmacm (a CM id's `verbs`, which librdmacm keeps
// open for the life of the process) or from the application
// (VerbsDeviceForContext). Either way this wrapper does not own or close
// the context. One VerbsDevice exists per context, owned by the device
// registry (provider/device_registry.h) until process exit (librpma has no
// release for contexts), so plain pointers to it are safe to hand out.
//
// Thread-safety: all members are safe to call from any thread.
#ifndef RPMA_VERBS_VERBS_DEVICE_H_
#define RPMA_VERBS_VERBS_DEVICE_H_

#include <infiniband/verbs.h>

#include <memory>

#include "provider/provider.h"

namespace rpma::prov::verbs {

class VerbsDevice final : public Device {
 public:
  // Returns the one VerbsDevice for ctx, creating it on first use (its caps
  // are queried once, with ibv_query_device_ex()). Null if ctx is null or
  // cannot be queried.
  static VerbsDevice* ForContext(struct ibv_context* ctx);

  struct ibv_context* context() override {
    return ctx_;
  }
  DeviceCaps caps() const override { return caps_; }
  // ibv_alloc_pd(). -ENOMEM, or the negative errno of ibv_alloc_pd().
  int AllocPd(std::unique_ptr<Pd>* out) override;
  const char* provider_name() const override { return "verbs"; }

 private:
  VerbsDevice(struct ibv_context* ctx, DeviceCaps caps)
      : ctx_(ctx), caps_(caps) {}

  struct ibv_context* const ctx_;  // not owned
  const DeviceCaps caps_;
};

// The ibv_context of the RDMA device owning addr (LOCAL: rdma_bind_addr;
// REMOTE: rdma_resolve_addr within 1000 ms), via a temporary synchronous CM
// id, as librpma's rpma_utils_get_ibv_context(). Loopback addresses are
// declined. -ENODEV when no RDMA device serves addr (including when
// librdmacm finds no device at all), -EINVAL when addr does not resolve,
// -ENOMEM. VerbsGetDevice() = AnyRdmaDevice() + this + ForContext().
int ContextForAddress(const char* addr, bool local, struct ibv_context** out);

// True if libibverbs sees at least one RDMA device on this host. Cheap
// (a sysfs scan) and silent; false when the verbs kernel modules are absent.
bool AnyRdmaDevice();

}  // namespace rpma::prov::verbs

#endif  // RPMA_VERBS_VERBS_DEVICE_H_
