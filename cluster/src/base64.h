// Base64 as etcd's JSON gateway writes bytes fields (Go's StdEncoding: the
// standard alphabet, '=' padding). Pure functions; thread-safe.
#ifndef KV_CLUSTER_BASE64_H_
#define KV_CLUSTER_BASE64_H_

#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::cluster {

std::string Base64Encode(std::string_view bytes);

// Decodes padded standard base64. Errors: corruption when `text` has a
// character outside the alphabet, a length that is not a multiple of 4,
// padding anywhere but the end, or non-zero bits after the last byte
// (each byte string has exactly one encoding).
Result<std::string> Base64Decode(std::string_view text);

}  // namespace kv::cluster

#endif  // KV_CLUSTER_BASE64_H_
