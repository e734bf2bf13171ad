// NodeRegistration's JSON. As in cluster_map_json.cc: the nesting is
// checked before parsing, and every field is read through a type check,
// never through nlohmann's throwing conversions.
#include "kv/cluster/node_registration.h"

#include <nlohmann/json.hpp>

#include "json_depth.h"
#include "kv/endpoint.h"

namespace kv::cluster {
namespace {

using nlohmann::json;

constexpr size_t kMaxAddress = 255;

Status Bad(const std::string& why) {
  return Status::Corruption("node registration: " + why);
}

}  // namespace

Status NodeRegistration::Validate() const {
  if (node_id == 0) {
    return Status::InvalidArgument("node registration: node id 0");
  }
  if (address.size() > kMaxAddress) {
    return Status::InvalidArgument("node registration: address longer than " +
                                   std::to_string(kMaxAddress) + " bytes");
  }
  for (char c : address) {
    if (c <= ' ' || c > '~') {
      return Status::InvalidArgument(
          "node registration: the address has a space or a non-printable "
          "byte");
    }
  }
  if (Result<Endpoint> e = Endpoint::Parse(address); !e.ok()) {
    return Status::InvalidArgument("node registration: " +
                                   e.status().message());
  }
  if (started_ms < 0) {
    return Status::InvalidArgument("node registration: negative started_ms");
  }
  return Status::Ok();
}

std::string NodeRegistration::Encode() const {
  return json{
      {"node_id", node_id}, {"address", address}, {"started_ms", started_ms}}
      .dump();
}

Result<NodeRegistration> NodeRegistration::Decode(std::string_view text) {
  if (text.size() > kMaxJsonBytes) {
    return Bad("larger than " + std::to_string(kMaxJsonBytes) + " bytes");
  }
  if (!JsonNestingWithin(text, 2)) return Bad("nested too deeply");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad("not a JSON object");
  NodeRegistration r;
  auto id = j.find("node_id");
  if (id == j.end() || !id->is_number_unsigned() || id->get<uint64_t>() == 0 ||
      id->get<uint64_t>() > UINT32_MAX) {
    return Bad("\"node_id\" must be an integer in 1..2^32-1");
  }
  r.node_id = static_cast<uint32_t>(id->get<uint64_t>());
  auto address = j.find("address");
  if (address == j.end() || !address->is_string()) {
    return Bad("\"address\" must be a string");
  }
  r.address = address->get<std::string>();
  auto started = j.find("started_ms");
  if (started == j.end() || !started->is_number_integer() ||
      (started->is_number_unsigned() && started->get<uint64_t>() > INT64_MAX)) {
    return Bad("\"started_ms\" must be an integer");
  }
  r.started_ms = started->get<int64_t>();
  if (Status s = r.Validate(); !s.ok()) return Status::Corruption(s.message());
  return r;
}

}  // namespace kv::cluster
