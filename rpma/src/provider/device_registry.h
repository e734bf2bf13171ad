// The one device registry of the rpma layer.
//
// Every provider Device the process ever uses is made and owned here:
// the tcp provider's synthetic devices (one per address and capability
// set), the verbs provider's wrappers (one per ibv_context, whether
// librdmacm or the application opened it) and the test fakes. The registry
// maps a provider's key to its device (so a second lookup returns the same
// one), maps the ibv_context handed out by rpma_utils_get_ibv_context()
// back to its Device (rpma_peer_new() gets only the context), and answers
// RPMA_PROVIDER's `auto` selection.
//
// Lifetime: devices live until process exit (librpma has no release for
// contexts), and so does the registry itself (never destroyed, so no
// static destructor can find it gone); plain Device pointers and contexts
// may be handed out and kept.
//
// Thread-safety: every function may be called from any thread.
#ifndef RPMA_PROVIDER_DEVICE_REGISTRY_H_
#define RPMA_PROVIDER_DEVICE_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "provider/provider.h"

namespace rpma::prov {

class DeviceRegistry {
 public:
  // The process's registry.
  static DeviceRegistry& Instance();

  // Makes a device; `ordinal` counts the devices of that provider made so
  // far (the tcp provider names its devices rpma_tcp<ordinal>). Null
  // when it cannot (nothing is registered then).
  using Factory = std::function<std::unique_ptr<Device>(int ordinal)>;

  // The device registered under (provider, key), made with `make` on
  // first use (under the registry's lock: exactly one device per key).
  // Null if `make` returned null.
  Device* Intern(const std::string& provider, const std::string& key,
                 const Factory& make);
  // Takes ownership of a device made elsewhere (a test fake) so that
  // Find() knows its context; returns it.
  Device* Adopt(std::unique_ptr<Device> device);
  // The registered device whose context() is ctx; null if none.
  Device* Find(struct ibv_context* ctx) const;
  size_t size() const;

  DeviceRegistry() = default;
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;

 private:
  Device* AddLocked(std::unique_ptr<Device> device);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Device>> devices_;  // owned, never freed
  std::map<std::pair<std::string, std::string>, Device*> by_key_;
  std::map<std::string, int> made_;  // per provider
  std::unordered_map<struct ibv_context*, Device*> by_context_;
};

// The Device behind a context returned by rpma_utils_get_ibv_context(), or
// a verbs Device wrapping an ibv_context the application opened itself
// (registered on first use). Null if the context is null, unknown, and no
// verbs device can wrap it.
Device* DeviceFromContext(struct ibv_context* ctx);

// 0.0.0.0 or :: (numeric forms only).
bool IsWildcardAddress(const char* addr);

// Picks the provider by RPMA_PROVIDER (tcp | verbs | auto; default auto:
// verbs when it has a device for the address, else tcp) and returns its
// (registered) device for the address.
// -EINVAL for an unknown RPMA_PROVIDER value or an unresolvable address;
// -ENODEV when the chosen provider has no device for it; -EADDRNOTAVAIL in
// auto mode for a wildcard address on a host with RDMA devices (its
// listener would get tcp, its clients verbs).
int SelectDevice(const char* addr, bool local, Device** out);

}  // namespace rpma::prov

#endif  // RPMA_PROVIDER_DEVICE_REGISTRY_H_
