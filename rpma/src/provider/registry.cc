// Device registry and provider selection.
//
// Contexts handed out by rpma_utils_get_ibv_context() must map back to the
// provider Device that made them (rpma_peer_new() only gets the context).
// Devices are never freed, so plain pointers are safe to hand out.

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "log_internal.h"
#include "provider/provider.h"

namespace rpma::prov {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex m;
  return m;
}

std::unordered_map<ibv_context*, Device*>& Registry() {
  static auto* map = new std::unordered_map<ibv_context*, Device*>();
  return *map;
}

}  // namespace

void RegisterDevice(Device* device) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry()[device->context()] = device;
}

Device* DeviceFromContext(ibv_context* ctx) {
  if (ctx == nullptr) return nullptr;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = Registry().find(ctx);
    if (it != Registry().end()) return it->second;
  }
  Device* dev = VerbsDeviceForContext(ctx);
  if (dev != nullptr) RegisterDevice(dev);
  return dev;
}

bool IsWildcardAddress(const char* addr) {
  if (addr == nullptr) return false;
  in_addr v4;
  if (inet_pton(AF_INET, addr, &v4) == 1) return v4.s_addr == INADDR_ANY;
  in6_addr v6;
  if (inet_pton(AF_INET6, addr, &v6) == 1) return IN6_IS_ADDR_UNSPECIFIED(&v6);
  return false;
}

int SelectDevice(const char* addr, bool local, Device** out) {
  const char* env = std::getenv("RPMA_PROVIDER");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) {
    int rc = VerbsGetDevice(addr, local, out);
    if (rc != -ENODEV) return rc;
    if (IsWildcardAddress(addr) && VerbsHasDevices()) {
      // A wildcard bind belongs to no RDMA device, so auto would pick tcp
      // for this listener while its clients, resolving the host's real
      // address, pick verbs: a silent mismatch that only shows as
      // connections that never complete. Refuse instead.
      RPMA_LOG_ERROR(
          "RPMA_PROVIDER=auto cannot choose for the wildcard address %s on "
          "a host with RDMA devices: listen on a specific address, or set "
          "RPMA_PROVIDER=verbs or RPMA_PROVIDER=tcp on both sides",
          addr);
      return -EADDRNOTAVAIL;
    }
    return TcpGetDevice(addr, local, out);
  }
  if (std::strcmp(env, "tcp") == 0) return TcpGetDevice(addr, local, out);
  if (std::strcmp(env, "verbs") == 0) return VerbsGetDevice(addr, local, out);
  return -EINVAL;
}

}  // namespace rpma::prov
