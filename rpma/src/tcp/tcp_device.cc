// Placeholder until the tcp provider lands: no tcp device.
#include <cerrno>

#include "provider/provider.h"

namespace rpma::prov {
int TcpGetDevice(const char*, bool, Device**) { return -ENODEV; }
}  // namespace rpma::prov
