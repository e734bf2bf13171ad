// Unit tests of verbs device discovery that hold on any host: loopback and
// unresolvable addresses never yield a verbs device, promptly, and the
// registry falls back past verbs. On hosts without RDMA devices (this
// project's CI) every lookup is -ENODEV.
#include "verbs/verbs_device.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "provider/device_registry.h"
#include "provider/provider.h"
#include "verbs/verbs_pd.h"

namespace rpma::prov {
namespace {

// Runs VerbsGetDevice on a helper thread and waits at most `limit` for it,
// so a hang fails the test instead of blocking ctest until its timeout.
// Returns false on timeout (the helper is then abandoned, detached).
bool GetDeviceWithin(const char* addr, bool local,
                     std::chrono::milliseconds limit, int* rc, Device** dev) {
  struct Result {
    int rc = 0;
    Device* dev = nullptr;
  };
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  std::string a = addr;
  std::thread([promise, a, local] {
    Result r;
    r.rc = VerbsGetDevice(a.c_str(), local, &r.dev);
    promise->set_value(r);
  }).detach();
  if (future.wait_for(limit) != std::future_status::ready) return false;
  Result r = future.get();
  *rc = r.rc;
  *dev = r.dev;
  return true;
}

// Sets RPMA_PROVIDER for one test and restores the previous value.
class ScopedProvider {
 public:
  explicit ScopedProvider(const char* value) {
    const char* old = std::getenv("RPMA_PROVIDER");
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    setenv("RPMA_PROVIDER", value, 1);
  }
  ~ScopedProvider() {
    if (had_old_) {
      setenv("RPMA_PROVIDER", old_.c_str(), 1);
    } else {
      unsetenv("RPMA_PROVIDER");
    }
  }

 private:
  bool had_old_ = false;
  std::string old_;
};

constexpr auto kBound = std::chrono::seconds(2);

TEST(VerbsDeviceTest, LoopbackLocalIsNoDevicePromptly) {
  int rc = 0;
  Device* dev = nullptr;
  ASSERT_TRUE(GetDeviceWithin("127.0.0.1", true, kBound, &rc, &dev))
      << "VerbsGetDevice(127.0.0.1, LOCAL) did not return within 2 s";
  EXPECT_EQ(rc, -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

TEST(VerbsDeviceTest, LoopbackRemoteIsNoDevicePromptly) {
  int rc = 0;
  Device* dev = nullptr;
  ASSERT_TRUE(GetDeviceWithin("127.0.0.1", false, kBound, &rc, &dev))
      << "VerbsGetDevice(127.0.0.1, REMOTE) did not return within 2 s";
  EXPECT_EQ(rc, -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

TEST(VerbsDeviceTest, Ipv6LoopbackIsNoDevice) {
  Device* dev = nullptr;
  EXPECT_EQ(VerbsGetDevice("::1", true, &dev), -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

TEST(VerbsDeviceTest, NoDeviceHostAnswersNoDeviceForAnyAddress) {
  if (verbs::AnyRdmaDevice()) GTEST_SKIP() << "this host has RDMA devices";
  Device* dev = nullptr;
  EXPECT_EQ(VerbsGetDevice("192.0.2.1", true, &dev), -ENODEV);
  EXPECT_EQ(VerbsGetDevice("192.0.2.1", false, &dev), -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

// Documented order: a host without RDMA devices answers -ENODEV before any
// name resolution; with devices, a name that does not resolve is -EINVAL.
TEST(VerbsDeviceTest, UnresolvableAddressIsNoDeviceOrInvalid) {
  Device* dev = nullptr;
  const int rc = VerbsGetDevice("no-such-host.invalid", false, &dev);
  EXPECT_EQ(rc, verbs::AnyRdmaDevice() ? -EINVAL : -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

// Auto mode asks verbs first on every lookup: the no-device answer must not
// print anything (libibverbs/librdmacm warnings would spam every run).
TEST(VerbsDeviceTest, NoDeviceLookupIsSilent) {
  testing::internal::CaptureStderr();
  Device* dev = nullptr;
  const int rc1 = VerbsGetDevice("127.0.0.1", true, &dev);
  const int rc2 = VerbsGetDevice("127.0.0.1", false, &dev);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc1, -ENODEV);
  EXPECT_EQ(rc2, -ENODEV);
  EXPECT_EQ(err, "");
}

// The librdmacm path behind the device-list check: loopback is declined and
// a host without rdma_cm devices answers -ENODEV, silently and promptly.
TEST(VerbsDeviceTest, ContextForLoopbackIsNoDeviceSilently) {
  for (bool local : {true, false}) {
    SCOPED_TRACE(local);
    ibv_context* ctx = nullptr;
    testing::internal::CaptureStderr();
    const auto start = std::chrono::steady_clock::now();
    const int rc = verbs::ContextForAddress("127.0.0.1", local, &ctx);
    const auto took = std::chrono::steady_clock::now() - start;
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, -ENODEV);
    EXPECT_EQ(ctx, nullptr);
    EXPECT_EQ(err, "");
    // Generous bound: a REMOTE resolve is capped at 1000 ms by design.
    EXPECT_LT(took, kBound);
  }
}

TEST(VerbsDeviceTest, ContextForUnresolvableName) {
  ibv_context* ctx = nullptr;
  const int rc = verbs::ContextForAddress("no-such-host.invalid", false, &ctx);
  // Without rdma_cm devices librdmacm fails before resolving the name.
  if (verbs::AnyRdmaDevice()) {
    EXPECT_EQ(rc, -EINVAL);
  } else {
    EXPECT_EQ(rc, -ENODEV);
  }
  EXPECT_EQ(ctx, nullptr);
}

TEST(VerbsDeviceTest, ResolveAddrInfoRejectsNullAddress) {
  rdma_addrinfo* res = nullptr;
  EXPECT_EQ(verbs::ResolveAddrInfo(nullptr, "7204", true, &res), -EINVAL);
  EXPECT_EQ(res, nullptr);
}

TEST(VerbsDeviceTest, NullArgumentsAreInvalid) {
  Device* dev = nullptr;
  EXPECT_EQ(VerbsGetDevice(nullptr, true, &dev), -EINVAL);
  EXPECT_EQ(VerbsGetDevice("127.0.0.1", true, nullptr), -EINVAL);
  EXPECT_EQ(dev, nullptr);
}

TEST(VerbsDeviceTest, NullContextIsNotWrapped) {
  EXPECT_EQ(VerbsDeviceForContext(nullptr), nullptr);
  EXPECT_EQ(DeviceFromContext(nullptr), nullptr);
}

TEST(VerbsDeviceTest, SelectVerbsOnLoopbackFailsCleanly) {
  ScopedProvider env("verbs");
  Device* dev = nullptr;
  EXPECT_EQ(SelectDevice("127.0.0.1", true, &dev), -ENODEV);
  EXPECT_EQ(SelectDevice("127.0.0.1", false, &dev), -ENODEV);
  EXPECT_EQ(dev, nullptr);
}

// auto must fall through to tcp: either tcp's device (once the tcp provider
// is in) or tcp's own -ENODEV, never a verbs device.
TEST(VerbsDeviceTest, SelectAutoOnLoopbackDoesNotPickVerbs) {
  for (const char* value : {"auto", ""}) {
    SCOPED_TRACE(value);
    ScopedProvider env(value);
    for (bool local : {true, false}) {
      Device* dev = nullptr;
      const int rc = SelectDevice("127.0.0.1", local, &dev);
      if (rc == 0) {
        ASSERT_NE(dev, nullptr);
        EXPECT_STREQ(dev->provider_name(), "tcp");
      } else {
        EXPECT_EQ(rc, -ENODEV);
        EXPECT_EQ(dev, nullptr);
      }
    }
  }
}

TEST(VerbsDeviceTest, SelectUnknownProviderIsInvalid) {
  ScopedProvider env("carrier-pigeon");
  Device* dev = nullptr;
  EXPECT_EQ(SelectDevice("127.0.0.1", true, &dev), -EINVAL);
  EXPECT_EQ(dev, nullptr);
}

}  // namespace
}  // namespace rpma::prov
