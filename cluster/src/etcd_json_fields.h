// Checked access to the fields of a parsed etcd answer, shared by the
// decoders (etcd_json_decode.cc) and the error mapping. Each getter
// leaves proto3's default (0, false, "") when the field is absent or null,
// and returns corruption when it has another type or does not fit.
#ifndef KV_CLUSTER_ETCD_JSON_FIELDS_H_
#define KV_CLUSTER_ETCD_JSON_FIELDS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::cluster::etcd_json {

// corruption: "malformed answer: <why>" (callers add which etcd sent it).
Status Bad(const std::string& why);

// obj[name], or nullptr when obj is not an object or has no such field.
const nlohmann::json* Field(const nlohmann::json& obj, const char* name);

// An int64: a decimal string (how the gateway writes int64) or a JSON
// integer (int32 fields).
Status GetInt(const nlohmann::json& obj, const char* name, int64_t* out);
Status GetBool(const nlohmann::json& obj, const char* name, bool* out);
Status GetString(const nlohmann::json& obj, const char* name, std::string* out);
// A bytes field: base64 decoded.
Status GetBytes(const nlohmann::json& obj, const char* name, std::string* out);

// Parses a whole answer that must be a JSON object. An error answer
// ({"error": ...} with neither header nor result) gives its Status
// (DecodeError), so callers see etcd's error and not "malformed".
Result<nlohmann::json> ParseAnswer(std::string_view what,
                                   std::string_view body);

}  // namespace kv::cluster::etcd_json

#endif  // KV_CLUSTER_ETCD_JSON_FIELDS_H_
