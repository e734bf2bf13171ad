// KeyspaceSpec: its rules and its JSON. As in node_registration.cc: the
// nesting is checked before parsing, and every field is read through a
// type check, never through nlohmann's throwing conversions.
#include <nlohmann/json.hpp>

#include "json_depth.h"
#include "kv/cluster/keyspace_spec.h"

namespace kv::cluster {
namespace {

using nlohmann::json;

constexpr size_t kMaxDepth = 4;

// obj[field] as an unsigned integer in [lo, hi], or corruption from `bad`.
template <typename Bad>
Status GetBounded(const json& obj, const char* field, uint64_t lo, uint64_t hi,
                  const Bad& bad, uint32_t* out) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_number_unsigned() ||
      it->get<uint64_t>() < lo || it->get<uint64_t>() > hi) {
    return bad(std::string("\"") + field + "\" must be an integer in " +
               std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<uint32_t>(it->get<uint64_t>());
  return Status::Ok();
}

}  // namespace

Status KeyspaceSpec::Validate() const {
  KV_RETURN_IF_ERROR(ValidateClusterKeyspaceName(name));
  if (shards == 0 || shards > kSlotCount) {
    return Status::InvalidArgument("keyspace '" + name + "': 1.." +
                                   std::to_string(kSlotCount) +
                                   " shards, got " + std::to_string(shards));
  }
  if (replicas == 0 || replicas > ClusterMap::kMaxReplicas) {
    return Status::InvalidArgument("keyspace '" + name + "': 1.." +
                                   std::to_string(ClusterMap::kMaxReplicas) +
                                   " replicas, got " +
                                   std::to_string(replicas));
  }
  return Status::Ok();
}

std::string KeyspaceSpec::Encode() const {
  return json{{"shards", shards}, {"replicas", replicas}}.dump();
}

Result<KeyspaceSpec> KeyspaceSpec::Decode(std::string_view name,
                                          std::string_view text) {
  // The name comes from an etcd key: quote at most a bounded prefix of it.
  const std::string quoted(name.substr(0, 64));
  auto bad = [&](const std::string& why) {
    return Status::Corruption("keyspace spec '" + quoted + "': " + why);
  };
  if (text.size() > kMaxJsonBytes) {
    return bad("larger than " + std::to_string(kMaxJsonBytes) + " bytes");
  }
  // The spec itself is flat; the slack lets a newer writer add nested
  // members, which are ignored.
  if (!JsonNestingWithin(text, kMaxDepth)) return bad("nested too deeply");
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  KeyspaceSpec spec;
  spec.name = std::string(name);
  KV_RETURN_IF_ERROR(GetBounded(j, "shards", 1, kSlotCount, bad, &spec.shards));
  KV_RETURN_IF_ERROR(GetBounded(j, "replicas", 1, ClusterMap::kMaxReplicas, bad,
                                &spec.replicas));
  if (Status st = spec.Validate(); !st.ok()) return bad(st.message());
  return spec;
}

}  // namespace kv::cluster
