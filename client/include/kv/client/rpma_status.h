// Mapping of librpma return codes to kv::Status, so the client library
// reports transport failures in the project's one error vocabulary.
// Thread-safe.
#ifndef KV_CLIENT_RPMA_STATUS_H_
#define KV_CLIENT_RPMA_STATUS_H_

#include <string>

#include "kv/status.h"

namespace kv::client {

// Converts `rc` (0 or a negative RPMA_E_* value) returned by `what` (the
// name of the call, e.g. "rpma_read") into a Status: 0 → ok, INVAL →
// invalid_argument, NOMEM → no_space, NO_COMPLETION/NO_EVENT/AGAIN → busy,
// NOSUPP → invalid_argument, PROVIDER/UNKNOWN/other → unavailable. The
// message names the call and librpma's text for the code.
Status StatusFromRpma(int rc, const std::string& what);

}  // namespace kv::client

#endif  // KV_CLIENT_RPMA_STATUS_H_
