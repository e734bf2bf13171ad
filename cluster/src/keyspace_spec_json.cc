// KeyspaceSpec: its rules and its JSON, read through json_checked.h (the
// nesting bounded before parsing, every field type- and range-checked).
#include <nlohmann/json.hpp>

#include "json_checked.h"
#include "kv/cluster/keyspace_spec.h"

namespace kv::cluster {
namespace {

constexpr size_t kMaxDepth = 4;

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
  return nlohmann::json{{"shards", shards}, {"replicas", replicas}}.dump();
}

Result<KeyspaceSpec> KeyspaceSpec::Decode(std::string_view name,
                                          std::string_view text) {
  // The name comes from an etcd key: quote at most a bounded prefix of it.
  const std::string what =
      "keyspace spec '" + std::string(name.substr(0, 64)) + "'";
  // The spec itself is flat; the slack lets a newer writer add nested
  // members, which are ignored.
  nlohmann::json j;
  KV_RETURN_IF_ERROR(
      json_checked::ParseObject(text, kMaxJsonBytes, kMaxDepth, what, &j));
  KeyspaceSpec spec;
  spec.name = std::string(name);
  uint64_t v = 0;
  KV_RETURN_IF_ERROR(
      json_checked::GetUint(j, "shards", 1, kSlotCount, what, &v));
  spec.shards = static_cast<uint32_t>(v);
  KV_RETURN_IF_ERROR(json_checked::GetUint(j, "replicas", 1,
                                           ClusterMap::kMaxReplicas, what, &v));
  spec.replicas = static_cast<uint32_t>(v);
  if (Status st = spec.Validate(); !st.ok()) {
    return Status::Corruption(what + ": " + st.message());
  }
  return spec;
}

}  // namespace kv::cluster
