// utils: device lookup for an address (through the provider registry), the
// ODP capability query and the connection-event strings.

#include "export.h"
#include "log_internal.h"
#include "provider/device_registry.h"

RPMA_EXPORT int rpma_utils_get_ibv_context(const char* addr,
                                           enum rpma_util_ibv_context_type type,
                                           struct ibv_context** ibv_ctx_ptr) {
  if (addr == nullptr || ibv_ctx_ptr == nullptr) return RPMA_E_INVAL;
  const int t = rpma::EnumValue(&type);
  if (t != RPMA_UTIL_IBV_CONTEXT_LOCAL && t != RPMA_UTIL_IBV_CONTEXT_REMOTE)
    return RPMA_E_INVAL;

  rpma::prov::Device* device = nullptr;
  int rc =
      rpma::prov::SelectDevice(addr, t == RPMA_UTIL_IBV_CONTEXT_LOCAL, &device);
  if (rc != 0) {
    // librpma: rdma_getaddrinfo/rdma_bind_addr/rdma_resolve_addr failures
    // are provider errors; only an allocation failure is NOMEM.
    return RPMA_PROVIDER_FAILED_NOMEM(
        rc, "finding a device for address %s (%s)", addr,
        t == RPMA_UTIL_IBV_CONTEXT_LOCAL ? "local" : "remote");
  }
  *ibv_ctx_ptr = device->context();
  return 0;
}

RPMA_EXPORT int rpma_utils_ibv_context_is_odp_capable(
    struct ibv_context* ibv_ctx, int* is_odp_capable) {
  if (ibv_ctx == nullptr || is_odp_capable == nullptr) return RPMA_E_INVAL;
  *is_odp_capable = 0;
  rpma::prov::Device* device = rpma::prov::DeviceFromContext(ibv_ctx);
  if (device == nullptr) {
    RPMA_LOG_ERROR("cannot query an unknown device context");
    return RPMA_E_PROVIDER;
  }
  *is_odp_capable = device->caps().odp ? 1 : 0;
  return 0;
}

RPMA_EXPORT const char* rpma_utils_conn_event_2str(
    enum rpma_conn_event conn_event) {
  switch (rpma::EnumValue(&conn_event)) {
    case RPMA_CONN_UNDEFINED:
      return "Undefined connection event";
    case RPMA_CONN_ESTABLISHED:
      return "Connection established";
    case RPMA_CONN_CLOSED:
      return "Connection closed";
    case RPMA_CONN_LOST:
      return "Connection lost";
    case RPMA_CONN_REJECTED:
      return "Connection rejected";
    case RPMA_CONN_UNREACHABLE:
      return "Connection unreachable";
    default:
      return "Unsupported connection event";
  }
}
