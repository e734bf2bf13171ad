// Decoding etcd's JSON gateway answers (etcd_json.h). Nothing here
// trusts the input: every field's type is checked before it is read (the
// nlohmann accessors used only after is_*() checks, parse without
// exceptions), numbers are parsed strictly, and revisions are checked
// against each other so that garbage cannot reach the cluster's map.
#include <charconv>
#include <nlohmann/json.hpp>

#include "base64.h"
#include "etcd_json.h"
#include "etcd_json_fields.h"

namespace kv::cluster::etcd_json {
namespace {

using nlohmann::json;

// The header's revision; required (> 0) in every kv and lease answer.
Result<int64_t> HeaderRevision(const json& obj, bool required) {
  const json* h = Field(obj, "header");
  if (h == nullptr) {
    if (!required) return int64_t{0};
    return Bad("no header");
  }
  if (!h->is_object()) return Bad("header is not an object");
  int64_t rev = 0;
  KV_RETURN_IF_ERROR(GetInt(*h, "revision", &rev));
  if (rev < 0 || (required && rev == 0)) {
    return Bad("header revision " + std::to_string(rev));
  }
  return rev;
}

// A key as a range answer holds it: created, changed no later than the
// answer's revision.
Status DecodeKv(const json& j, int64_t header_rev, KeyValue* kv) {
  if (!j.is_object()) return Bad("a kv is not an object");
  KV_RETURN_IF_ERROR(GetBytes(j, "key", &kv->key));
  KV_RETURN_IF_ERROR(GetBytes(j, "value", &kv->value));
  KV_RETURN_IF_ERROR(GetInt(j, "create_revision", &kv->create_revision));
  KV_RETURN_IF_ERROR(GetInt(j, "mod_revision", &kv->mod_revision));
  KV_RETURN_IF_ERROR(GetInt(j, "lease", &kv->lease));
  if (kv->key.empty()) return Bad("a kv with an empty key");
  if (kv->create_revision <= 0 || kv->mod_revision < kv->create_revision ||
      kv->mod_revision > header_rev || kv->lease < 0) {
    return Bad("kv '" + kv->key + "' has revisions create " +
               std::to_string(kv->create_revision) + ", mod " +
               std::to_string(kv->mod_revision) + " at revision " +
               std::to_string(header_rev) + ", lease " +
               std::to_string(kv->lease));
  }
  return Status::Ok();
}

Status DecodeEvent(const json& j, int64_t header_rev, WatchEvent* ev) {
  if (!j.is_object()) return Bad("a watch event is not an object");
  const json* type = Field(j, "type");
  if (type == nullptr || *type == "PUT" || *type == 0) {
    ev->type = WatchEvent::Type::kPut;
  } else if (*type == "DELETE" || *type == 1) {
    ev->type = WatchEvent::Type::kDelete;
  } else {
    return Bad("a watch event of unknown type");
  }
  const json* kv = Field(j, "kv");
  if (kv == nullptr || !kv->is_object()) return Bad("a watch event with no kv");
  KV_RETURN_IF_ERROR(GetBytes(*kv, "key", &ev->key));
  KV_RETURN_IF_ERROR(GetBytes(*kv, "value", &ev->value));
  KV_RETURN_IF_ERROR(GetInt(*kv, "mod_revision", &ev->mod_revision));
  if (ev->key.empty()) return Bad("a watch event with an empty key");
  if (ev->mod_revision <= 0 ||
      (header_rev > 0 && ev->mod_revision > header_rev)) {
    return Bad("a watch event at revision " + std::to_string(ev->mod_revision));
  }
  if (ev->type == WatchEvent::Type::kDelete) ev->value.clear();
  return Status::Ok();
}

}  // namespace

Result<Range> DecodeRange(std::string_view body) {
  Result<json> j = ParseAnswer("range", body);
  if (!j.ok()) return j.status();
  Range r;
  Result<int64_t> rev = HeaderRevision(*j, true);
  if (!rev.ok()) return rev.status();
  r.revision = *rev;
  const json* kvs = Field(*j, "kvs");
  if (kvs != nullptr) {
    if (!kvs->is_array()) return Bad("kvs is not an array");
    for (const json& e : *kvs) {
      KeyValue kv;
      KV_RETURN_IF_ERROR(DecodeKv(e, r.revision, &kv));
      if (!r.kvs.empty() && r.kvs.back().key >= kv.key) {
        return Bad("kvs not sorted by key");
      }
      r.kvs.push_back(std::move(kv));
    }
  }
  return r;
}

Result<int64_t> DecodePut(std::string_view body) {
  Result<json> j = ParseAnswer("put", body);
  if (!j.ok()) return j.status();
  return HeaderRevision(*j, true);
}

Result<DeleteResult> DecodeDeleteRange(std::string_view body) {
  Result<json> j = ParseAnswer("delete", body);
  if (!j.ok()) return j.status();
  DeleteResult d;
  Result<int64_t> rev = HeaderRevision(*j, true);
  if (!rev.ok()) return rev.status();
  d.revision = *rev;
  int64_t deleted = 0;
  KV_RETURN_IF_ERROR(GetInt(*j, "deleted", &deleted));
  if (deleted < 0 || deleted > 1) {
    return Bad("deleted " + std::to_string(deleted) + " keys of one");
  }
  d.deleted = deleted == 1;
  return d;
}

Result<TxnResult> DecodeTxn(std::string_view body) {
  Result<json> j = ParseAnswer("txn", body);
  if (!j.ok()) return j.status();
  TxnResult t;
  Result<int64_t> rev = HeaderRevision(*j, true);
  if (!rev.ok()) return rev.status();
  t.revision = *rev;
  KV_RETURN_IF_ERROR(GetBool(*j, "succeeded", &t.succeeded));
  return t;
}

Result<Lease> DecodeLeaseGrant(std::string_view body) {
  Result<json> j = ParseAnswer("lease grant", body);
  if (!j.ok()) return j.status();
  Result<int64_t> rev = HeaderRevision(*j, true);
  if (!rev.ok()) return rev.status();
  std::string error;
  KV_RETURN_IF_ERROR(GetString(*j, "error", &error));
  if (!error.empty()) return Status::IoError("etcd: lease grant: " + error);
  Lease l;
  KV_RETURN_IF_ERROR(GetInt(*j, "ID", &l.id));
  KV_RETURN_IF_ERROR(GetInt(*j, "TTL", &l.ttl_s));
  if (l.id <= 0 || l.ttl_s <= 0) {
    return Bad("lease grant gave id " + std::to_string(l.id) + ", TTL " +
               std::to_string(l.ttl_s));
  }
  return l;
}

Result<int64_t> DecodeLeaseKeepAlive(std::string_view body, int64_t id) {
  Result<json> j = ParseAnswer("lease keepalive", body);
  if (!j.ok()) return j.status();
  const json* result = Field(*j, "result");
  if (result == nullptr || !result->is_object()) return Bad("no result");
  Result<int64_t> rev = HeaderRevision(*result, true);
  if (!rev.ok()) return rev.status();
  int64_t got_id = 0, ttl = 0;
  KV_RETURN_IF_ERROR(GetInt(*result, "ID", &got_id));
  KV_RETURN_IF_ERROR(GetInt(*result, "TTL", &ttl));
  if (got_id != id) {
    return Bad("keepalive of lease " + std::to_string(id) +
               " answered for lease " + std::to_string(got_id));
  }
  if (ttl < 0) return Bad("keepalive gave TTL " + std::to_string(ttl));
  if (ttl == 0) {
    return Status::NotFound("etcd: lease " + std::to_string(id) +
                            " not found (expired or revoked)");
  }
  return ttl;
}

Status DecodeHeaderOnly(std::string_view body) {
  Result<json> j = ParseAnswer("request", body);
  if (!j.ok()) return j.status();
  return HeaderRevision(*j, true).status();
}

Result<WatchMessage> DecodeWatchLine(std::string_view line) {
  Result<json> j = ParseAnswer("watch", line);
  if (!j.ok()) return j.status();
  const json* result = Field(*j, "result");
  if (result == nullptr || !result->is_object()) return Bad("no result");
  WatchMessage m;
  Result<int64_t> rev = HeaderRevision(*result, false);
  if (!rev.ok()) return rev.status();
  m.header_revision = *rev;
  KV_RETURN_IF_ERROR(GetBool(*result, "created", &m.created));
  KV_RETURN_IF_ERROR(GetBool(*result, "canceled", &m.canceled));
  KV_RETURN_IF_ERROR(GetInt(*result, "compact_revision", &m.compact_revision));
  KV_RETURN_IF_ERROR(GetString(*result, "cancel_reason", &m.cancel_reason));
  if (m.compact_revision < 0) return Bad("negative compact_revision");
  const json* events = Field(*result, "events");
  if (events != nullptr) {
    if (!events->is_array()) return Bad("events is not an array");
    for (const json& e : *events) {
      WatchEvent ev;
      KV_RETURN_IF_ERROR(DecodeEvent(e, m.header_revision, &ev));
      if (!m.events.empty() && ev.mod_revision < m.events.back().mod_revision) {
        return Bad("watch events out of revision order");
      }
      m.events.push_back(std::move(ev));
    }
  }
  return m;
}

}  // namespace kv::cluster::etcd_json
