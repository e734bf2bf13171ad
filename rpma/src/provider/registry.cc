// Device registry and provider selection.
//
// Contexts handed out by rpma_utils_get_ibv_context() must map back to the
// provider Device that made them (rpma_peer_new() only gets the context).
// Devices are never freed, so plain pointers are safe to hand out.

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

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

int SelectDevice(const char* addr, bool local, Device** out) {
  const char* env = std::getenv("RPMA_PROVIDER");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) {
    int rc = VerbsGetDevice(addr, local, out);
    if (rc != -ENODEV) return rc;
    return TcpGetDevice(addr, local, out);
  }
  if (std::strcmp(env, "tcp") == 0) return TcpGetDevice(addr, local, out);
  if (std::strcmp(env, "verbs") == 0) return VerbsGetDevice(addr, local, out);
  return -EINVAL;
}

}  // namespace rpma::prov
