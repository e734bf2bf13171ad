// The synthetic device of the tcp provider: one per (address, mode), owned
// by the device registry (provider/device_registry.h) and never freed. Its
// ibv_context is a zeroed placeholder (with a synthetic ibv_device named
// rpma_tcpN) that only serves as a handle for the registry.
//
// What the device claims to be is chosen when it is looked up, from the
// environment, so that CI can run the semantic layer the way it runs on
// the common NIC:
//   RPMA_TCP_CAPS   comma-separated, applied left to right (default native):
//                     native        native flush and native atomic write
//                     emulated      neither: every flush is librpma's
//                                   read-after-write, every atomic write a
//                                   fenced 8-byte write (ConnectX-4/5/6 on
//                                   rdma-core 44); as a target it refuses
//                                   a native one from a peer, as such a
//                                   NIC does (tcp_target.h)
//                     flush, no_flush, atomic_write, no_atomic_write
//                     iwarp, no_iwarp   iWARP transport: READ_DST regions
//                                   also get remote write (off by default)
//                   An unknown token makes the lookup fail (-EINVAL).
//   RPMA_TCP_STRICT=1  behave as strictly as an IB/RoCE NIC where tcp could
//                   be kinder (tcp_mode.h lists what changes).
#ifndef RPMA_TCP_TCP_DEVICE_H_
#define RPMA_TCP_TCP_DEVICE_H_

#include <string>

#include "provider/provider.h"

namespace rpma::prov::tcp {

// RPMA_TCP_STRICT=1 (read when a connection is created or connects):
//   - private data is delivered zero-padded to the limits (provider.h);
//   - the disconnect rule: no automatic reply to the peer's disconnect
//     (the initiator's kDisconnected waits for the peer's Disconnect() or
//     id destruction, or kStrictDisconnectWaitMs);
//   - a CQ overrun is fatal (every later Poll() fails with -EOVERFLOW).
bool StrictMode();

// Parses an RPMA_TCP_CAPS value (null or empty = native) into *out.
// -EINVAL (and *out untouched) for an unknown token.
int ParseCaps(const char* spec, DeviceCaps* out);

// The registered tcp device for addr with exactly `caps` (whatever
// RPMA_TCP_CAPS says); TcpGetDevice() = ParseCaps(RPMA_TCP_CAPS) + this.
// -EINVAL when addr does not resolve.
int GetDeviceWithCaps(const char* addr, bool local, const DeviceCaps& caps,
                      Device** out);

class TcpDevice : public Device {
 public:
  TcpDevice(int index, std::string host, DeviceCaps caps);
  struct ibv_context* context() override {
    return &ctx_;
  }
  DeviceCaps caps() const override { return caps_; }
  int AllocPd(std::unique_ptr<Pd>* out) override;
  const char* provider_name() const override { return "tcp"; }
  const std::string& host() const { return host_; }

 private:
  struct ibv_device dev_;
  struct ibv_context ctx_;
  std::string host_;
  const DeviceCaps caps_;
};

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_TCP_DEVICE_H_
