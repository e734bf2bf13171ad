// Checked reading of the small JSON objects rpkv keeps in etcd (a desired
// keyspace, a move record, a move's progress): anyone with etcd access
// can write them, so every value is read through a type and range check,
// never through nlohmann's throwing conversions, and a text is parsed
// only after its size and nesting were bounded (json_depth.h).
//
// Every error is corruption "<what>: <why>", `what` naming the value
// ("keyspace spec 'users'", "move record 'users'/3"). A caller bounds
// `what` (it may quote bytes from an etcd key).
//
// Thread-safety: pure functions.
#ifndef KV_CLUSTER_JSON_CHECKED_H_
#define KV_CLUSTER_JSON_CHECKED_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::cluster::json_checked {

// Parses `text` into *out, which must then be a JSON object. Errors:
// "larger than <max_bytes> bytes", "nested too deeply" (deeper than
// `max_depth`), "not a JSON object" (also for bad syntax).
Status ParseObject(std::string_view text, size_t max_bytes, size_t max_depth,
                   const std::string& what, nlohmann::json* out);

// obj[name] as an unsigned integer in [lo, hi]. Error: "\"<name>\" must be
// an integer in <lo>..<hi>" (absent, null, negative, fractional, a string,
// out of range).
Status GetUint(const nlohmann::json& obj, const char* name, uint64_t lo,
               uint64_t hi, const std::string& what, uint64_t* out);

// obj[name] as true or false. Error: "\"<name>\" must be true or false".
Status GetBool(const nlohmann::json& obj, const char* name,
               const std::string& what, bool* out);

// obj[name] as a string of at most `max_bytes`. Errors: "\"<name>\" must
// be a string", "\"<name>\" is longer than <max_bytes> bytes".
Status GetString(const nlohmann::json& obj, const char* name, size_t max_bytes,
                 const std::string& what, std::string* out);

}  // namespace kv::cluster::json_checked

#endif  // KV_CLUSTER_JSON_CHECKED_H_
