// Helpers shared by the files of the librpma semantic layer.
#ifndef RPMA_EXPORT_H_
#define RPMA_EXPORT_H_

#include <cerrno>
#include <cstring>

#include "librpma.h"

// The objects are compiled with -fvisibility=hidden; only the librpma API
// is exported (and librpma.map keeps everything but rpma_* local).
#define RPMA_EXPORT extern "C" __attribute__((visibility("default")))

namespace rpma {

// The integer behind an enum argument. C callers may pass any int in an
// enum parameter; reading it through memcpy keeps UBSan's enum check from
// flagging the validation itself.
// Takes the enum's address: even passing it by value would be a load.
template <typename E>
inline int EnumValue(const E* e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, e, sizeof(v));
  return v;
}

// librpma maps allocation failures to RPMA_E_NOMEM and every other
// provider failure to RPMA_E_PROVIDER (after logging the errno text).
inline int ProviderError(int neg_errno) {
  return neg_errno == -ENOMEM ? RPMA_E_NOMEM : RPMA_E_PROVIDER;
}

}  // namespace rpma

#endif  // RPMA_EXPORT_H_
