// The device registry and provider selection; see device_registry.h.

#include "provider/device_registry.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "log_internal.h"

namespace rpma::prov {

DeviceRegistry& DeviceRegistry::Instance() {
  // Never destroyed: contexts handed out must outlive static destructors.
  static auto* registry = new DeviceRegistry();
  return *registry;
}

Device* DeviceRegistry::AddLocked(std::unique_ptr<Device> device) {
  Device* d = device.get();
  devices_.push_back(std::move(device));
  by_context_[d->context()] = d;
  return d;
}

Device* DeviceRegistry::Intern(const std::string& provider,
                               const std::string& key, const Factory& make) {
  std::lock_guard<std::mutex> lock(mu_);
  auto k = std::make_pair(provider, key);
  auto it = by_key_.find(k);
  if (it != by_key_.end()) return it->second;
  std::unique_ptr<Device> device = make(made_[provider]);
  if (device == nullptr) return nullptr;
  ++made_[provider];
  Device* d = AddLocked(std::move(device));
  by_key_.emplace(std::move(k), d);
  return d;
}

Device* DeviceRegistry::Adopt(std::unique_ptr<Device> device) {
  if (device == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return AddLocked(std::move(device));
}

Device* DeviceRegistry::Find(ibv_context* ctx) const {
  if (ctx == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_context_.find(ctx);
  return it != by_context_.end() ? it->second : nullptr;
}

size_t DeviceRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return devices_.size();
}

Device* DeviceFromContext(ibv_context* ctx) {
  if (ctx == nullptr) return nullptr;
  Device* dev = DeviceRegistry::Instance().Find(ctx);
  // An application-opened context: the verbs provider wraps (and
  // registers) it.
  return dev != nullptr ? dev : VerbsDeviceForContext(ctx);
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
