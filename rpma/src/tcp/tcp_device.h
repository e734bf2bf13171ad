// The synthetic device of the tcp provider: one per address, never freed.
// Its ibv_context is a zeroed placeholder (with a synthetic ibv_device
// named rpma_tcpN) that only serves as a handle for the registry.
#ifndef RPMA_TCP_TCP_DEVICE_H_
#define RPMA_TCP_TCP_DEVICE_H_

#include <string>

#include "provider/provider.h"

namespace rpma::prov::tcp {

class TcpDevice : public Device {
 public:
  TcpDevice(int index, std::string host);
  struct ibv_context* context() override {
    return &ctx_;
  }
  DeviceCaps caps() const override;
  int AllocPd(std::unique_ptr<Pd>* out) override;
  const char* provider_name() const override { return "tcp"; }
  const std::string& host() const { return host_; }

 private:
  struct ibv_device dev_;
  struct ibv_context ctx_;
  std::string host_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_DEVICE_H_
