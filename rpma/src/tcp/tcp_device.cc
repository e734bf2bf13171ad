// Synthetic devices of the tcp provider and its entry point; see
// tcp_device.h.
#include "tcp/tcp_device.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "log_internal.h"
#include "provider/device_registry.h"
#include "tcp/socket_util.h"
#include "tcp/tcp_pd.h"

namespace rpma::prov {
namespace tcp {

bool StrictMode() {
  const char* env = std::getenv("RPMA_TCP_STRICT");
  return env != nullptr && std::strcmp(env, "1") == 0;
}

int ParseCaps(const char* spec, DeviceCaps* out) {
  DeviceCaps c;
  c.native_flush = true;
  c.native_atomic_write = true;
  std::string_view rest = spec != nullptr ? spec : "";
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view tok = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    if (tok == "native") {
      c.native_flush = c.native_atomic_write = true;
    } else if (tok == "emulated") {
      c.native_flush = c.native_atomic_write = false;
    } else if (tok == "flush" || tok == "no_flush") {
      c.native_flush = tok == "flush";
    } else if (tok == "atomic_write" || tok == "no_atomic_write") {
      c.native_atomic_write = tok == "atomic_write";
    } else if (tok == "iwarp" || tok == "no_iwarp") {
      c.iwarp = tok == "iwarp";
    } else if (!tok.empty()) {
      return -EINVAL;
    }
  }
  *out = c;
  return 0;
}

TcpDevice::TcpDevice(int index, std::string host, DeviceCaps caps)
    : host_(std::move(host)), caps_(caps) {
  std::memset(&dev_, 0, sizeof(dev_));
  std::memset(&ctx_, 0, sizeof(ctx_));
  // Transport as the device claims it: iWARP is RDMA over TCP; otherwise
  // what RoCE reports (an IB channel adapter).
  dev_.node_type = caps.iwarp ? IBV_NODE_RNIC : IBV_NODE_CA;
  dev_.transport_type = caps.iwarp ? IBV_TRANSPORT_IWARP : IBV_TRANSPORT_IB;
  std::snprintf(dev_.name, sizeof(dev_.name), "rpma_tcp%d", index);
  std::snprintf(dev_.dev_name, sizeof(dev_.dev_name), "rpma_tcp%d", index);
  ctx_.device = &dev_;
  ctx_.cmd_fd = -1;
  ctx_.async_fd = -1;
  ctx_.num_comp_vectors = 1;
}

int TcpDevice::AllocPd(std::unique_ptr<Pd>* out) {
  return TcpPd::Create(caps_, out);
}

int GetDeviceWithCaps(const char* addr, bool local, const DeviceCaps& caps,
                      Device** out) {
  if (addr == nullptr || out == nullptr) return -EINVAL;
  SockAddr sa;
  int rc = Resolve(addr, nullptr, local, &sa);
  if (rc != 0) return rc;
  std::string host = NumericHost(sa);
  // One device per address and capability set: a context handed out keeps
  // the capabilities it was looked up with.
  std::string key = host + "|" + (caps.native_flush ? "F" : "f") +
                    (caps.native_atomic_write ? "A" : "a") +
                    (caps.iwarp ? "I" : "i");
  Device* dev = DeviceRegistry::Instance().Intern(
      "tcp", key, [&](int ordinal) -> std::unique_ptr<Device> {
        return std::make_unique<TcpDevice>(ordinal, host, caps);
      });
  if (dev == nullptr) return -ENOMEM;
  *out = dev;
  return 0;
}

}  // namespace tcp

int TcpGetDevice(const char* addr, bool local, Device** out) {
  if (addr == nullptr || out == nullptr) return -EINVAL;
  DeviceCaps caps;
  const char* spec = std::getenv("RPMA_TCP_CAPS");
  if (tcp::ParseCaps(spec, &caps) != 0) {
    RPMA_LOG_ERROR(
        "tcp: RPMA_TCP_CAPS=%s: expected native, emulated, [no_]flush, "
        "[no_]atomic_write or [no_]iwarp, comma-separated",
        spec);
    return -EINVAL;
  }
  return tcp::GetDeviceWithCaps(addr, local, caps, out);
}

}  // namespace rpma::prov
