// MoveRecord and MoveProgress: their rules and their JSON, read through
// json_checked.h (size and nesting bounded before parsing, every member
// type- and range-checked). Both are flat objects; the depth slack lets a
// newer writer add nested members, which are ignored.
#include "kv/cluster/move_record.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "json_checked.h"
#include "kv/cluster/cluster_map.h"

namespace kv::cluster {
namespace {

using nlohmann::json;

constexpr size_t kMaxDepth = 4;
constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();

constexpr std::array<std::pair<MovePhase, std::string_view>, 5> kPhases = {{
    {MovePhase::kCopy, "copy"},
    {MovePhase::kReady, "ready"},
    {MovePhase::kHandoff, "handoff"},
    {MovePhase::kReleased, "released"},
    {MovePhase::kCancel, "cancel"},
}};

// A "format" newer than `current` is invalid_argument (upgrade rpkv);
// then it must be exactly `current`.
Status CheckFormat(const json& j, int current, const std::string& what) {
  auto f = j.find("format");
  if (f != j.end() && f->is_number_unsigned() &&
      f->get<uint64_t>() > static_cast<uint64_t>(current)) {
    return Status::InvalidArgument(what + ": format " +
                                   std::to_string(f->get<uint64_t>()) +
                                   " is newer than this build reads (" +
                                   std::to_string(current) + "): upgrade rpkv");
  }
  uint64_t v = 0;
  return json_checked::GetUint(j, "format", current, current, what, &v);
}

Status GetPhase(const json& j, const std::string& what, MovePhase* out) {
  std::string name;
  KV_RETURN_IF_ERROR(json_checked::GetString(j, "phase", 16, what, &name));
  Result<MovePhase> p = ParseMovePhase(name);
  if (!p.ok()) return Status::Corruption(what + ": " + p.status().message());
  *out = *p;
  return Status::Ok();
}

Status GetU32(const json& j, const char* name, uint64_t lo, uint64_t hi,
              const std::string& what, uint32_t* out) {
  uint64_t v = 0;
  KV_RETURN_IF_ERROR(json_checked::GetUint(j, name, lo, hi, what, &v));
  *out = static_cast<uint32_t>(v);
  return Status::Ok();
}

std::string RecordName(std::string_view keyspace, uint32_t shard) {
  // The keyspace may come from a hostile etcd key: quote a bounded prefix.
  return "'" + std::string(keyspace.substr(0, 64)) +
         (keyspace.size() > 64 ? "..." : "") + "'/" + std::to_string(shard);
}

}  // namespace

std::string_view MovePhaseName(MovePhase p) {
  for (const auto& [phase, name] : kPhases) {
    if (phase == p) return name;
  }
  return "unknown";
}

Result<MovePhase> ParseMovePhase(std::string_view name) {
  for (const auto& [phase, n] : kPhases) {
    if (n == name) return phase;
  }
  std::string shown;
  for (char c : name.substr(0, 16)) shown += (c >= ' ' && c <= '~') ? c : '?';
  return Status::InvalidArgument(
      "phase '" + shown +
      "' is not one of copy, ready, handoff, released, "
      "cancel");
}

std::string MoveRecord::Name() const { return RecordName(keyspace, shard); }

Status MoveRecord::Validate() const {
  const std::string what = "move record " + Name();
  if (Status st = ValidateClusterKeyspaceName(keyspace); !st.ok()) {
    return Status::InvalidArgument(what + ": " + st.message());
  }
  if (shard > kMaxShardId) {
    return Status::InvalidArgument(what + ": shard id above " +
                                   std::to_string(kMaxShardId));
  }
  if (source == 0 || target == 0) {
    return Status::InvalidArgument(what + ": node id 0 is not a node");
  }
  if (source == target) {
    return Status::InvalidArgument(what + ": source and target are node " +
                                   std::to_string(source));
  }
  if (epoch == 0) return Status::InvalidArgument(what + ": epoch 0");
  if (reason.size() > kMaxReason) {
    return Status::InvalidArgument(what + ": a reason over " +
                                   std::to_string(kMaxReason) + " bytes");
  }
  for (char c : reason) {
    if (c < ' ' || c > '~') {
      return Status::InvalidArgument(
          what + ": the reason has a byte outside printable ASCII");
    }
  }
  return Status::Ok();
}

std::string MoveRecord::Encode() const {
  json j = {{"format", kFormat},
            {"keyspace", keyspace},
            {"shard", shard},
            {"source", source},
            {"target", target},
            {"epoch", epoch},
            {"phase", std::string(MovePhaseName(phase))},
            {"paused", paused},
            {"rate_bytes_per_s", rate_bytes_per_s},
            {"last_sequence", last_sequence},
            {"reason", reason}};
  if (join) j["join"] = true;  // absent: a move (records before joins)
  // Validate keeps every string ASCII; replace anyway so dump never throws.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<MoveRecord> MoveRecord::Decode(std::string_view keyspace, uint32_t shard,
                                      std::string_view text) {
  const std::string what = "move record " + RecordName(keyspace, shard);
  json j;
  KV_RETURN_IF_ERROR(
      json_checked::ParseObject(text, kMaxJsonBytes, kMaxDepth, what, &j));
  KV_RETURN_IF_ERROR(CheckFormat(j, kFormat, what));
  MoveRecord r;
  KV_RETURN_IF_ERROR(json_checked::GetString(
      j, "keyspace", kMaxClusterKeyspaceNameSize, what, &r.keyspace));
  KV_RETURN_IF_ERROR(GetU32(j, "shard", 0, kMaxShardId, what, &r.shard));
  // A value copied under another key must not act for that key's shard.
  if (r.keyspace != keyspace || r.shard != shard) {
    return Status::Corruption(what + ": the value is the record of " +
                              r.Name() + ", not of the shard its key names");
  }
  KV_RETURN_IF_ERROR(GetU32(j, "source", 1, kU32, what, &r.source));
  KV_RETURN_IF_ERROR(GetU32(j, "target", 1, kU32, what, &r.target));
  KV_RETURN_IF_ERROR(GetU32(j, "epoch", 1, kU32, what, &r.epoch));
  KV_RETURN_IF_ERROR(GetPhase(j, what, &r.phase));
  KV_RETURN_IF_ERROR(json_checked::GetBool(j, "paused", what, &r.paused));
  KV_RETURN_IF_ERROR(json_checked::GetUint(j, "rate_bytes_per_s", 0, kU64, what,
                                           &r.rate_bytes_per_s));
  KV_RETURN_IF_ERROR(json_checked::GetUint(j, "last_sequence", 0, kU64, what,
                                           &r.last_sequence));
  KV_RETURN_IF_ERROR(
      json_checked::GetString(j, "reason", kMaxReason, what, &r.reason));
  if (j.contains("join")) {
    KV_RETURN_IF_ERROR(json_checked::GetBool(j, "join", what, &r.join));
  }
  if (Status st = r.Validate(); !st.ok()) {
    // Validate's message names the record already.
    return Status::Corruption(st.message());
  }
  return r;
}

std::string MoveProgress::Encode() const {
  const json j = {{"format", kFormat},
                  {"phase", std::string(MovePhaseName(phase))},
                  {"keys_copied", keys_copied},
                  {"bytes_copied", bytes_copied},
                  {"keys_total", keys_total},
                  {"keys_forwarded", keys_forwarded},
                  {"updated_unix_ms", updated_unix_ms}};
  return j.dump();
}

Result<MoveProgress> MoveProgress::Decode(std::string_view text) {
  const std::string what = "move progress";
  json j;
  KV_RETURN_IF_ERROR(
      json_checked::ParseObject(text, kMaxJsonBytes, kMaxDepth, what, &j));
  KV_RETURN_IF_ERROR(CheckFormat(j, kFormat, what));
  MoveProgress p;
  KV_RETURN_IF_ERROR(GetPhase(j, what, &p.phase));
  const std::pair<const char*, uint64_t*> counters[] = {
      {"keys_copied", &p.keys_copied},
      {"bytes_copied", &p.bytes_copied},
      {"keys_total", &p.keys_total},
      {"keys_forwarded", &p.keys_forwarded},
      {"updated_unix_ms", &p.updated_unix_ms},
  };
  for (const auto& [name, out] : counters) {
    KV_RETURN_IF_ERROR(json_checked::GetUint(j, name, 0, kU64, what, out));
  }
  return p;
}

}  // namespace kv::cluster
