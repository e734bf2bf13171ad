// Request bodies for etcd's JSON gateway (etcd_json.h). int64 fields are
// written as strings, as the gateway's own marshaller does, so values
// beyond 2^53 survive any JSON reader in between.
#include <nlohmann/json.hpp>

#include "base64.h"
#include "etcd_json.h"

namespace kv::cluster::etcd_json {
namespace {

using nlohmann::json;

std::string Int(int64_t v) { return std::to_string(v); }

json Op(const TxnOp& op) {
  if (op.type == TxnOp::Type::kDelete) {
    return {{"request_delete_range", {{"key", Base64Encode(op.key)}}}};
  }
  json put = {{"key", Base64Encode(op.key)}, {"value", Base64Encode(op.value)}};
  if (op.lease != 0) put["lease"] = Int(op.lease);
  return {{"request_put", put}};
}

json Ops(const std::vector<TxnOp>& ops) {
  json out = json::array();
  for (const TxnOp& op : ops) out.push_back(Op(op));
  return out;
}

}  // namespace

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string RangeRequest(std::string_view key, std::string_view range_end) {
  json j = {{"key", Base64Encode(key)}};
  if (!range_end.empty()) j["range_end"] = Base64Encode(range_end);
  return j.dump();
}

std::string PutRequest(std::string_view key, std::string_view value,
                       int64_t lease) {
  json j = {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease != 0) j["lease"] = Int(lease);
  return j.dump();
}

std::string DeleteRangeRequest(std::string_view key) {
  return json({{"key", Base64Encode(key)}}).dump();
}

std::string TxnRequest(const std::vector<Compare>& compares,
                       const std::vector<TxnOp>& success,
                       const std::vector<TxnOp>& failure) {
  json cs = json::array();
  for (const Compare& c : compares) {
    json j = {{"key", Base64Encode(c.key)}, {"result", "EQUAL"}};
    switch (c.target) {
      case Compare::Target::kModRevision:
        j["target"] = "MOD";
        j["mod_revision"] = Int(c.revision);
        break;
      case Compare::Target::kCreateRevision:
        j["target"] = "CREATE";
        j["create_revision"] = Int(c.revision);
        break;
      case Compare::Target::kValue:
        j["target"] = "VALUE";
        j["value"] = Base64Encode(c.value);
        break;
    }
    cs.push_back(std::move(j));
  }
  return json({{"compare", cs},
               {"success", Ops(success)},
               {"failure", Ops(failure)}})
      .dump();
}

std::string LeaseGrantRequest(int64_t ttl_s) {
  return json({{"TTL", Int(ttl_s)}}).dump();
}

std::string LeaseIdRequest(int64_t id) {
  return json({{"ID", Int(id)}}).dump();
}

std::string CompactRequest(int64_t revision) {
  return json({{"revision", Int(revision)}}).dump();
}

std::string WatchCreateRequest(std::string_view key, std::string_view range_end,
                               int64_t start_revision) {
  json create = {{"key", Base64Encode(key)}};
  if (!range_end.empty()) create["range_end"] = Base64Encode(range_end);
  if (start_revision != 0) create["start_revision"] = Int(start_revision);
  // Progress notifications (event-less answers on a quiet range) move the
  // resume point forward, so a reconnect does not ask for old history.
  create["progress_notify"] = true;
  return json({{"create_request", create}}).dump();
}

}  // namespace kv::cluster::etcd_json
