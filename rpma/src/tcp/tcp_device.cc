// Synthetic devices of the tcp provider and its entry point; see
// tcp_device.h.
#include "tcp/tcp_device.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "tcp/socket_util.h"
#include "tcp/tcp_pd.h"

namespace rpma::prov {
namespace tcp {

TcpDevice::TcpDevice(int index, std::string host) : host_(std::move(host)) {
  std::memset(&dev_, 0, sizeof(dev_));
  std::memset(&ctx_, 0, sizeof(ctx_));
  // iWARP is RDMA over TCP: the closest real node/transport type.
  dev_.node_type = IBV_NODE_RNIC;
  dev_.transport_type = IBV_TRANSPORT_IWARP;
  std::snprintf(dev_.name, sizeof(dev_.name), "rpma_tcp%d", index);
  std::snprintf(dev_.dev_name, sizeof(dev_.dev_name), "rpma_tcp%d", index);
  ctx_.device = &dev_;
  ctx_.cmd_fd = -1;
  ctx_.async_fd = -1;
  ctx_.num_comp_vectors = 1;
}

DeviceCaps TcpDevice::caps() const {
  DeviceCaps c;
  c.odp = false;
  c.native_atomic_write = true;
  c.native_flush = true;
  return c;
}

int TcpDevice::AllocPd(std::unique_ptr<Pd>* out) { return TcpPd::Create(out); }

}  // namespace tcp

int TcpGetDevice(const char* addr, bool local, Device** out) {
  if (addr == nullptr || out == nullptr) return -EINVAL;
  tcp::SockAddr sa;
  int rc = tcp::Resolve(addr, nullptr, local, &sa);
  if (rc != 0) return rc;
  std::string host = tcp::NumericHost(sa);
  static std::mutex mu;
  static auto* devices = new std::map<std::string, tcp::TcpDevice*>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices->find(host);
  if (it == devices->end()) {
    // Never freed: contexts handed out must stay valid (provider.h).
    auto* dev = new tcp::TcpDevice(static_cast<int>(devices->size()), host);
    it = devices->emplace(host, dev).first;
    RegisterDevice(dev);
  }
  *out = it->second;
  return 0;
}

}  // namespace rpma::prov
