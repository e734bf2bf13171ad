#include "etcd_json_fields.h"

#include <charconv>

#include "base64.h"
#include "etcd_json.h"

namespace kv::cluster::etcd_json {
namespace {

using nlohmann::json;

std::string Name(const char* name) {
  return std::string("field '") + name + "'";
}

// etcd's gRPC code and message → the Status etcd.h promises. The gateway
// passes gRPC codes through; etcd's own errors are told apart by text
// only where one code covers two meanings.
Status FromGrpc(std::string_view what, int64_t code, const std::string& msg) {
  std::string m = "etcd refused " + std::string(what) + ": " + msg;
  switch (code) {
    case 3:  // InvalidArgument
      return Status::InvalidArgument(m);
    case 4:  // DeadlineExceeded
      return Status::TimedOut(m);
    case 5:  // NotFound (a lease)
      return Status::NotFound(m);
    case 7:   // PermissionDenied
    case 16:  // Unauthenticated
      return Status::PermissionDenied(m);
    case 8:  // ResourceExhausted: "mvcc: database space exceeded"
      return Status::NoSpace(m +
                             " (compact and defragment etcd, or raise "
                             "its --quota-backend-bytes)");
    case 10:  // Aborted
      return Status::Busy(m);
    case 11:  // OutOfRange: a compacted or future revision, a huge TTL
      if (msg.find("compacted") != std::string::npos) {
        return Status::NotFound(m);
      }
      return Status::InvalidArgument(m);
    case 1:   // Canceled
    case 14:  // Unavailable: no leader, stopping, "request timed out"
      if (msg.find("timed out") != std::string::npos) {
        return Status::TimedOut(m);
      }
      return Status::Unavailable(m);
    case 15:  // DataLoss
      return Status::Corruption(m);
    default:
      return Status::IoError(m + " (gRPC code " + std::to_string(code) + ")");
  }
}

// Both error shapes: unary {"error": "...", "code": N, "message": "..."}
// and streaming {"error": {"grpc_code": N, "message": "...", ...}}.
Status ErrorFromJson(std::string_view what, long http_status, const json& j) {
  const json* e = Field(j, "error");
  if (e == nullptr)
    return Bad("an HTTP " + std::to_string(http_status) +
               " answer without an error");
  int64_t code = 0;
  std::string msg;
  if (e->is_object()) {
    KV_RETURN_IF_ERROR(GetInt(*e, "grpc_code", &code));
    KV_RETURN_IF_ERROR(GetString(*e, "message", &msg));
  } else {
    KV_RETURN_IF_ERROR(GetInt(j, "code", &code));
    KV_RETURN_IF_ERROR(GetString(j, "error", &msg));
  }
  if (code == 0) return Bad("an error with gRPC code 0");
  if (msg.empty()) msg = "(no message)";
  return FromGrpc(what, code, msg);
}

}  // namespace

Status Bad(const std::string& why) {
  return Status::Corruption("malformed answer: " + why);
}

const json* Field(const json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Status GetInt(const json& obj, const char* name, int64_t* out) {
  const json* f = Field(obj, name);
  if (f == nullptr) {
    *out = 0;
    return Status::Ok();
  }
  if (f->is_number_integer() && !f->is_number_unsigned()) {
    *out = f->get<int64_t>();
    return Status::Ok();
  }
  if (f->is_number_unsigned()) {
    uint64_t u = f->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX))
      return Bad(Name(name) + " out of range");
    *out = static_cast<int64_t>(u);
    return Status::Ok();
  }
  if (!f->is_string()) return Bad(Name(name) + " is not an integer");
  const std::string& s = f->get_ref<const std::string&>();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Bad(Name(name) + " is not an int64 (\"" + s.substr(0, 32) + "\")");
  }
  *out = v;
  return Status::Ok();
}

Status GetBool(const json& obj, const char* name, bool* out) {
  const json* f = Field(obj, name);
  *out = false;
  if (f == nullptr) return Status::Ok();
  if (!f->is_boolean()) return Bad(Name(name) + " is not a boolean");
  *out = f->get<bool>();
  return Status::Ok();
}

Status GetString(const json& obj, const char* name, std::string* out) {
  const json* f = Field(obj, name);
  out->clear();
  if (f == nullptr) return Status::Ok();
  if (!f->is_string()) return Bad(Name(name) + " is not a string");
  *out = f->get_ref<const std::string&>();
  return Status::Ok();
}

Status GetBytes(const json& obj, const char* name, std::string* out) {
  std::string text;
  KV_RETURN_IF_ERROR(GetString(obj, name, &text));
  Result<std::string> bytes = Base64Decode(text);
  if (!bytes.ok()) return Bad(Name(name) + ": " + bytes.status().message());
  *out = std::move(bytes.value());
  return Status::Ok();
}

Result<json> ParseAnswer(std::string_view what, std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Bad("the " + std::string(what) + " answer is not JSON");
  if (!j.is_object())
    return Bad("the " + std::string(what) + " answer is not an object");
  if (Field(j, "error") != nullptr && Field(j, "header") == nullptr &&
      Field(j, "result") == nullptr) {
    return ErrorFromJson(what, 200, j);
  }
  return j;
}

Status DecodeError(std::string_view what, long http_status,
                   std::string_view body) {
  json j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption(
        "etcd answered " + std::string(what) + " with HTTP " +
        std::to_string(http_status) +
        " and no etcd error (is this etcd 3.4 or newer, with its gRPC "
        "gateway on?)");
  }
  return ErrorFromJson(what, http_status, j);
}

}  // namespace kv::cluster::etcd_json
