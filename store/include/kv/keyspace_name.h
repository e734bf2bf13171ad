// Keyspace name rules, shared by the store, the server and clients (a
// client names its keyspace in the connect private data). Header-only.
#ifndef KV_KEYSPACE_NAME_H_
#define KV_KEYSPACE_NAME_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv {

inline constexpr size_t kMaxKeyspaceNameSize = 63;

// OK when `name` is 1..63 bytes of [A-Za-z0-9_.-]; invalid_argument naming
// the rule otherwise.
inline Status ValidateKeyspaceName(std::string_view name) {
  if (name.empty() || name.size() > kMaxKeyspaceNameSize) {
    return Status::InvalidArgument("keyspace name must be 1..63 bytes, got " +
                                   std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) {
      return Status::InvalidArgument(
          "keyspace name may only contain [A-Za-z0-9_.-]; '" +
          std::string(name) + "' does not");
    }
  }
  return Status::Ok();
}

}  // namespace kv

#endif  // KV_KEYSPACE_NAME_H_
