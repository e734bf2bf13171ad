// The one device registry (provider/device_registry.h): one device per
// provider key, owned and never freed, contexts mapped back to devices,
// and the tcp provider and the C API going through it.
#include "provider/device_registry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "api_test_util.h"
#include "tcp/tcp_device.h"

namespace rpma_test {
namespace {

using rpma::prov::Device;
using rpma::prov::DeviceCaps;
using rpma::prov::DeviceRegistry;
using rpma::prov::Pd;

class StubDevice : public Device {
 public:
  explicit StubDevice(int ordinal) : ordinal_(ordinal) {}
  struct ibv_context* context() override {
    return &ctx_;
  }
  DeviceCaps caps() const override { return {}; }
  int AllocPd(std::unique_ptr<Pd>*) override { return -ENOSYS; }
  const char* provider_name() const override { return "stub"; }
  int ordinal() const { return ordinal_; }

 private:
  struct ibv_context ctx_ = {};
  const int ordinal_;
};

DeviceRegistry::Factory Counting(int* calls) {
  return [calls](int ordinal) -> std::unique_ptr<Device> {
    ++*calls;
    return std::make_unique<StubDevice>(ordinal);
  };
}

TEST(DeviceRegistryTest, InternMakesOneDevicePerProviderKey) {
  DeviceRegistry r;
  int calls = 0;
  Device* a = r.Intern("tcp", "10.0.0.1|FAi", Counting(&calls));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(r.Intern("tcp", "10.0.0.1|FAi", Counting(&calls)), a);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.size(), 1u);
  // Another key, and the same key of another provider, are other devices.
  Device* b = r.Intern("tcp", "10.0.0.1|fai", Counting(&calls));
  Device* c = r.Intern("verbs", "10.0.0.1|FAi", Counting(&calls));
  EXPECT_NE(b, a);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(r.size(), 3u);
  // Ordinals count per provider.
  EXPECT_EQ(static_cast<StubDevice*>(a)->ordinal(), 0);
  EXPECT_EQ(static_cast<StubDevice*>(b)->ordinal(), 1);
  EXPECT_EQ(static_cast<StubDevice*>(c)->ordinal(), 0);
}

TEST(DeviceRegistryTest, FindMapsEachContextBackToItsDevice) {
  DeviceRegistry r;
  int calls = 0;
  Device* a = r.Intern("tcp", "a", Counting(&calls));
  Device* b = r.Intern("tcp", "b", Counting(&calls));
  EXPECT_EQ(r.Find(a->context()), a);
  EXPECT_EQ(r.Find(b->context()), b);
  struct ibv_context unknown = {};
  EXPECT_EQ(r.Find(&unknown), nullptr);
  EXPECT_EQ(r.Find(nullptr), nullptr);
}

TEST(DeviceRegistryTest, AFailedFactoryRegistersNothing) {
  DeviceRegistry r;
  EXPECT_EQ(r.Intern("verbs", "ctx",
                     [](int) -> std::unique_ptr<Device> { return nullptr; }),
            nullptr);
  EXPECT_EQ(r.size(), 0u);
  // The next attempt may succeed, and takes the unused ordinal.
  int calls = 0;
  Device* d = r.Intern("verbs", "ctx", Counting(&calls));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(static_cast<StubDevice*>(d)->ordinal(), 0);
}

TEST(DeviceRegistryTest, AdoptedDevicesAreFoundByContext) {
  DeviceRegistry r;
  Device* d = r.Adopt(std::make_unique<StubDevice>(7));
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(r.Find(d->context()), d);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.Adopt(nullptr), nullptr);
}

// The tcp provider makes its devices in the process registry: a second
// lookup of an address (local or remote) is the same device, and
// DeviceFromContext() — what rpma_peer_new() uses — finds it.
TEST(DeviceRegistryTest, TcpDevicesLiveInTheProcessRegistry) {
  DeviceCaps native;
  native.native_flush = native.native_atomic_write = true;
  DeviceCaps emulated;
  Device* a = nullptr;
  Device* b = nullptr;
  Device* e = nullptr;
  ASSERT_EQ(rpma::prov::tcp::GetDeviceWithCaps(kAddr, true, native, &a), 0);
  const size_t n = DeviceRegistry::Instance().size();
  ASSERT_EQ(rpma::prov::tcp::GetDeviceWithCaps(kAddr, false, native, &b), 0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(DeviceRegistry::Instance().size(), n);
  EXPECT_EQ(DeviceRegistry::Instance().Find(a->context()), a);
  EXPECT_EQ(rpma::prov::DeviceFromContext(a->context()), a);
  ASSERT_EQ(rpma::prov::tcp::GetDeviceWithCaps(kAddr, true, emulated, &e), 0);
  EXPECT_NE(e, a);
  EXPECT_FALSE(e->caps().native_flush);
  EXPECT_STRNE(e->context()->device->name, a->context()->device->name);
  EXPECT_EQ(rpma::prov::DeviceFromContext(e->context()), e);
}

// Through the C API: the same address gives the same context every time,
// and that context makes a peer.
TEST(DeviceRegistryTest, TheCApiHandsOutRegisteredContexts) {
  UseTcp();
  struct ibv_context* c1 = nullptr;
  struct ibv_context* c2 = nullptr;
  ASSERT_EQ(rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &c1),
            0);
  ASSERT_EQ(
      rpma_utils_get_ibv_context(kAddr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &c2), 0);
  EXPECT_EQ(c1, c2);
  EXPECT_NE(DeviceRegistry::Instance().Find(c1), nullptr);
  struct rpma_peer* peer = nullptr;
  ASSERT_EQ(rpma_peer_new(c1, &peer), 0);
  EXPECT_EQ(rpma_peer_delete(&peer), 0);
}

}  // namespace
}  // namespace rpma_test
