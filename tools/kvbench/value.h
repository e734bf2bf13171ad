// Self-checking values: what kvbench writes and verifies on every read, in
// both backends (a benchmark that returns wrong data is worthless).
//
// Layout of a value of n >= kMinValueSize bytes (little-endian):
//   [0, 8)      key id (the number the key was made from)
//   [8, 12)     version: a number the writer drew for this write
//   [12, 16)    n, the value's own length
//   [16, n - 4) bytes derived from (key id, version) by a PRNG
//   [n - 4, n)  CRC32C of bytes [0, n - 4)
// So a read can tell a torn, truncated or foreign value (another key's)
// from the right one without knowing which write it should see.
//
// Thread-safety: pure functions.
#ifndef RPKV_TOOLS_KVBENCH_VALUE_H_
#define RPKV_TOOLS_KVBENCH_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvbench {

inline constexpr size_t kMinValueSize = 20;

// Replaces *out with the value of `size` bytes (>= kMinValueSize) for key
// `key_id` at `version`.
void MakeValue(uint64_t key_id, uint32_t version, size_t size,
               std::string* out);

// Empty when `value` is a well-formed value of key `key_id`, else a
// sentence saying what is wrong (for the error count and the first few
// messages kvbench prints).
std::string CheckValue(uint64_t key_id, std::string_view value);

// The version a value that passed CheckValue was written with.
uint32_t ValueVersion(std::string_view value);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_VALUE_H_
