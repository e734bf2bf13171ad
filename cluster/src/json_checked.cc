#include "json_checked.h"

#include "json_depth.h"

namespace kv::cluster::json_checked {

using nlohmann::json;

namespace {

Status Bad(const std::string& what, const std::string& why) {
  return Status::Corruption(what + ": " + why);
}

std::string Quoted(const char* name) { return std::string("\"") + name + "\""; }

}  // namespace

Status ParseObject(std::string_view text, size_t max_bytes, size_t max_depth,
                   const std::string& what, json* out) {
  if (text.size() > max_bytes) {
    return Bad(what, "larger than " + std::to_string(max_bytes) + " bytes");
  }
  // The parser recurses per nesting level: bound it before parsing.
  if (!JsonNestingWithin(text, max_depth))
    return Bad(what, "nested too deeply");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad(what, "not a JSON object");
  *out = std::move(j);
  return Status::Ok();
}

Status GetUint(const json& obj, const char* name, uint64_t lo, uint64_t hi,
               const std::string& what, uint64_t* out) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number_unsigned() ||
      it->get<uint64_t>() < lo || it->get<uint64_t>() > hi) {
    return Bad(what, Quoted(name) + " must be an integer in " +
                         std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = it->get<uint64_t>();
  return Status::Ok();
}

Status GetBool(const json& obj, const char* name, const std::string& what,
               bool* out) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_boolean()) {
    return Bad(what, Quoted(name) + " must be true or false");
  }
  *out = it->get<bool>();
  return Status::Ok();
}

Status GetString(const json& obj, const char* name, size_t max_bytes,
                 const std::string& what, std::string* out) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_string()) {
    return Bad(what, Quoted(name) + " must be a string");
  }
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() > max_bytes) {
    return Bad(what, Quoted(name) + " is longer than " +
                         std::to_string(max_bytes) + " bytes");
  }
  *out = s;
  return Status::Ok();
}

}  // namespace kv::cluster::json_checked
