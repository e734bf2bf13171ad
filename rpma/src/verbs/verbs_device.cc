// Placeholder until the verbs provider lands: no verbs device.
#include <cerrno>

#include "provider/provider.h"

namespace rpma::prov {
int VerbsGetDevice(const char*, bool, Device**) { return -ENODEV; }
Device* VerbsDeviceForContext(ibv_context*) { return nullptr; }
}  // namespace rpma::prov
