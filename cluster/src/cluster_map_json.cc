// ClusterMap's JSON form (docs/cluster.md, "The map"):
//
//   {"format": 1, "slots": 1024, "keyspaces": [
//     {"name": "default", "id": 1, "shards": [
//       {"id": 0, "epoch": 3, "replicas": [2, 5], "slots": [[0, 511]]},
//       {"id": 1, "epoch": 1, "replicas": [3], "slots": [[512, 1023]]}]}]}
//
// Decoding reads every field through one checked accessor (type and
// range), never through nlohmann's throwing conversions, and parses only
// after JsonNestingWithin: hostile bytes give a Status, never an
// exception or a deep recursion.
#include <nlohmann/json.hpp>

#include "json_depth.h"
#include "kv/cluster/cluster_map.h"

namespace kv::cluster {
namespace {

using nlohmann::json;

// The deepest a valid map nests: map > keyspaces > keyspace > shards >
// shard > slots > range.
constexpr size_t kMaxDepth = 8;

Status Bad(const std::string& why) {
  return Status::Corruption("cluster map: " + why);
}

// obj[name] as an unsigned integer in [lo, hi].
Status GetUint(const json& obj, const char* name, uint64_t lo, uint64_t hi,
               uint64_t* out) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number_unsigned()) {
    return Bad(std::string("\"") + name + "\" must be an unsigned integer");
  }
  const uint64_t v = it->get<uint64_t>();
  if (v < lo || v > hi) {
    return Bad(std::string("\"") + name + "\" " + std::to_string(v) +
               " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

// obj[name] as an array of at most `max` elements.
Status GetArray(const json& obj, const char* name, size_t max,
                const json** out) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_array()) {
    return Bad(std::string("\"") + name + "\" must be an array");
  }
  if (it->size() > max) {
    return Bad(std::string("\"") + name + "\" has more than " +
               std::to_string(max) + " elements");
  }
  *out = &*it;
  return Status::Ok();
}

Status DecodeShard(const json& j, Shard* s) {
  if (!j.is_object()) return Bad("a shard must be an object");
  uint64_t v = 0;
  KV_RETURN_IF_ERROR(GetUint(j, "id", 0, UINT32_MAX, &v));
  s->id = static_cast<uint32_t>(v);
  KV_RETURN_IF_ERROR(GetUint(j, "epoch", 1, UINT32_MAX, &v));
  s->epoch = static_cast<uint32_t>(v);
  const json* replicas = nullptr;
  KV_RETURN_IF_ERROR(
      GetArray(j, "replicas", ClusterMap::kMaxReplicas, &replicas));
  for (const json& r : *replicas) {
    if (!r.is_number_unsigned() || r.get<uint64_t>() > UINT32_MAX) {
      return Bad("a replica must be a node id (an unsigned 32-bit integer)");
    }
    s->replicas.push_back(static_cast<uint32_t>(r.get<uint64_t>()));
  }
  const json* slots = nullptr;
  KV_RETURN_IF_ERROR(GetArray(j, "slots", kSlotCount, &slots));
  for (const json& range : *slots) {
    if (!range.is_array() || range.size() != 2 ||
        !range[0].is_number_unsigned() || !range[1].is_number_unsigned()) {
      return Bad("a slot range must be [first, last]");
    }
    const uint64_t first = range[0].get<uint64_t>();
    const uint64_t last = range[1].get<uint64_t>();
    if (first >= kSlotCount || last >= kSlotCount) {
      return Bad("slot range [" + std::to_string(first) + ", " +
                 std::to_string(last) + "] is outside 0.." +
                 std::to_string(kSlotCount - 1));
    }
    s->slots.emplace_back(static_cast<uint32_t>(first),
                          static_cast<uint32_t>(last));
  }
  return Status::Ok();
}

Status DecodeKeyspace(const json& j, KeyspaceShards* ks) {
  if (!j.is_object()) return Bad("a keyspace must be an object");
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) {
    return Bad("a keyspace needs a \"name\" string");
  }
  ks->name = name->get<std::string>();
  uint64_t id = 0;
  KV_RETURN_IF_ERROR(GetUint(j, "id", 1, UINT32_MAX, &id));
  ks->id = static_cast<uint32_t>(id);
  const json* shards = nullptr;
  KV_RETURN_IF_ERROR(GetArray(j, "shards", kSlotCount, &shards));
  ks->shards.resize(shards->size());
  for (size_t i = 0; i < shards->size(); i++) {
    KV_RETURN_IF_ERROR(DecodeShard((*shards)[i], &ks->shards[i]));
  }
  return Status::Ok();
}

}  // namespace

Result<ClusterMap> ClusterMap::Decode(std::string_view text) {
  if (text.size() > kMaxJsonBytes) {
    return Bad("larger than " + std::to_string(kMaxJsonBytes) + " bytes");
  }
  if (!JsonNestingWithin(text, kMaxDepth)) {
    return Bad("nested deeper than a map ever is");
  }
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad("not a JSON object");
  uint64_t v = 0;
  auto format = j.find("format");
  if (format != j.end() && format->is_number_unsigned() &&
      format->get<uint64_t>() > static_cast<uint64_t>(kFormat)) {
    return Status::InvalidArgument("cluster map format " +
                                   std::to_string(format->get<uint64_t>()) +
                                   " is newer than this build reads (" +
                                   std::to_string(kFormat) + "): upgrade rpkv");
  }
  KV_RETURN_IF_ERROR(GetUint(j, "format", kFormat, kFormat, &v));
  KV_RETURN_IF_ERROR(GetUint(j, "slots", kSlotCount, kSlotCount, &v));
  const json* keyspaces = nullptr;
  KV_RETURN_IF_ERROR(GetArray(j, "keyspaces", kMaxKeyspaces, &keyspaces));
  std::vector<KeyspaceShards> out(keyspaces->size());
  for (size_t i = 0; i < keyspaces->size(); i++) {
    KV_RETURN_IF_ERROR(DecodeKeyspace((*keyspaces)[i], &out[i]));
  }
  Result<ClusterMap> m = Build(std::move(out));
  if (!m.ok()) return Bad(m.status().message());
  return m;
}

std::string ClusterMap::Encode() const {
  json keyspaces = json::array();
  for (const KeyspaceShards& ks : keyspaces_) {
    json shards = json::array();
    for (const Shard& s : ks.shards) {
      json slots = json::array();
      for (const auto& [first, last] : s.slots) {
        slots.push_back(json::array({first, last}));
      }
      shards.push_back({{"id", s.id},
                        {"epoch", s.epoch},
                        {"replicas", s.replicas},
                        {"slots", std::move(slots)}});
    }
    keyspaces.push_back(
        {{"name", ks.name}, {"id", ks.id}, {"shards", std::move(shards)}});
  }
  const json j = {{"format", kFormat},
                  {"slots", kSlotCount},
                  {"keyspaces", std::move(keyspaces)}};
  // Invalid UTF-8 cannot occur (names are checked ASCII); replace anyway
  // so that dump never throws.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace kv::cluster
