// The C API (rpkv/rpkv.h) over kv::Client.
//
// Every extern "C" function catches everything: no C++ exception may
// unwind into a C caller (that is undefined behaviour, and in practice
// std::terminate). std::bad_alloc becomes RPKV_E_NOMEM, anything else
// RPKV_E_INTERNAL with the exception's text.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "kv/client/client.h"
#include "kv/status.h"
#include "rpkv/rpkv.h"

namespace {

using kv::StatusCode;

// The header promises RPKV_NOT_FOUND == kNotFound and -code for errors.
static_assert(RPKV_NOT_FOUND == static_cast<int>(StatusCode::kNotFound));
static_assert(RPKV_E_INVAL == -static_cast<int>(StatusCode::kInvalidArgument));
static_assert(RPKV_E_CORRUPTION == -static_cast<int>(StatusCode::kCorruption));
static_assert(RPKV_E_IO == -static_cast<int>(StatusCode::kIoError));
static_assert(RPKV_E_NOSPACE == -static_cast<int>(StatusCode::kNoSpace));
static_assert(RPKV_E_UNAVAILABLE ==
              -static_cast<int>(StatusCode::kUnavailable));
static_assert(RPKV_E_TIMEDOUT == -static_cast<int>(StatusCode::kTimedOut));
static_assert(RPKV_E_BUSY == -static_cast<int>(StatusCode::kBusy));
static_assert(RPKV_E_PERMISSION ==
              -static_cast<int>(StatusCode::kPermissionDenied));
static_assert(RPKV_E_CONDITION_FAILED ==
              -static_cast<int>(StatusCode::kConditionFailed));
static_assert(RPKV_E_WRONG_SHARD == -static_cast<int>(StatusCode::kWrongShard));

int CodeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return RPKV_OK;
    case StatusCode::kNotFound:
      return RPKV_NOT_FOUND;
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorruption:
    case StatusCode::kIoError:
    case StatusCode::kNoSpace:
    case StatusCode::kUnavailable:
    case StatusCode::kTimedOut:
    case StatusCode::kBusy:
    case StatusCode::kPermissionDenied:
    case StatusCode::kConditionFailed:
    case StatusCode::kWrongShard:
      return -static_cast<int>(code);
  }
  return RPKV_E_INTERNAL;  // a code added to kv::Status but not here
}

// One thread's message for one handle (or for the NULL handle). `fixed`
// replaces `text` when recording the text itself ran out of memory.
struct Message {
  std::string text;
  const char* fixed = nullptr;
  const char* c_str() const { return fixed != nullptr ? fixed : text.c_str(); }
  void Set(std::string_view s) noexcept {
    try {
      text.assign(s.data(), s.size());
      fixed = nullptr;
    } catch (...) {
      fixed = "out of memory (while recording the error message)";
    }
  }
};

// rpkv_connect failures and calls given a NULL handle.
thread_local Message t_null_handle_message;

}  // namespace

struct rpkv {
  std::unique_ptr<kv::Client> client;
  // Per-thread messages (rpkv.h, "Error messages"). Elements of an
  // unordered_map keep their address when others are inserted, so the
  // pointer rpkv_errmsg returns stays valid while other threads fail.
  mutable std::mutex mu;
  std::unordered_map<std::thread::id, Message> messages;  // guarded by mu
};

namespace {

// Records `text` as the calling thread's message for db and returns rc.
// Takes a string_view so that passing a literal allocates nothing: Record
// is what reports running out of memory.
int Record(const rpkv* db, int rc, std::string_view text) noexcept {
  if (db == nullptr) {
    t_null_handle_message.Set(text);
    return rc;
  }
  auto* h = const_cast<rpkv*>(db);
  try {
    std::lock_guard<std::mutex> lock(h->mu);
    h->messages[std::this_thread::get_id()].Set(text);
  } catch (...) {
    // No node could be inserted: the thread's message stays as it was.
  }
  return rc;
}

int FromStatus(const rpkv* db, const kv::Status& st) noexcept {
  int rc = CodeOf(st.code());
  if (rc == RPKV_OK) return rc;
  try {
    return Record(db, rc, st.ToString());
  } catch (...) {
    return Record(db, rc, "out of memory (while formatting the message)");
  }
}

// Runs fn (which returns an rpkv code) with no exception escaping.
template <typename Fn>
int Guard(const rpkv* db, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Record(db, RPKV_E_NOMEM, "out of memory in the rpkv client");
  } catch (const std::exception& e) {
    try {
      return Record(
          db, RPKV_E_INTERNAL,
          std::string("internal error in the rpkv client: ") + e.what());
    } catch (...) {
      return Record(db, RPKV_E_INTERNAL, "internal error in the rpkv client");
    }
  } catch (...) {
    return Record(db, RPKV_E_INTERNAL,
                  "internal error in the rpkv client: unknown exception");
  }
}

int Invalid(const rpkv* db, const char* fn, const char* what) noexcept {
  try {
    return Record(db, RPKV_E_INVAL,
                  std::string("invalid_argument: ") + fn + ": " + what);
  } catch (...) {
    return Record(db, RPKV_E_INVAL, "invalid argument");
  }
}

// The checks every keyed call makes before reaching kv::Client (which
// checks lengths and gives the limits).
int CheckKeyed(const rpkv* db, const char* fn, const void* key) noexcept {
  if (db == nullptr) return Invalid(nullptr, fn, "db is NULL");
  if (key == nullptr) return Invalid(db, fn, "key is NULL");
  return RPKV_OK;
}

std::string_view Bytes(const void* p, size_t n) {
  return p == nullptr ? std::string_view()
                      : std::string_view(static_cast<const char*>(p), n);
}

int Write(rpkv* db, const char* fn, const void* key, size_t key_len,
          const void* value, size_t value_len, kv::WriteOptions wo,
          uint64_t* version) noexcept {
  if (version != nullptr) *version = 0;
  if (int rc = CheckKeyed(db, fn, key); rc != RPKV_OK) return rc;
  if (value == nullptr && value_len > 0) {
    return Invalid(db, fn, "value is NULL but value_len is not 0");
  }
  return Guard(db, [&] {
    kv::KeyVersion written;
    wo.version = &written;
    kv::Status st =
        db->client->Put(Bytes(key, key_len), Bytes(value, value_len), wo);
    if (st.ok() && version != nullptr) *version = written.sequence;
    return FromStatus(db, st);
  });
}

int Read(rpkv* db, const char* fn, const void* key, size_t key_len,
         void** value, size_t* value_len, uint64_t* version) noexcept {
  if (value != nullptr) *value = nullptr;
  if (value_len != nullptr) *value_len = 0;
  if (version != nullptr) *version = 0;
  if (int rc = CheckKeyed(db, fn, key); rc != RPKV_OK) return rc;
  if (value == nullptr) return Invalid(db, fn, "value is NULL");
  if (value_len == nullptr) return Invalid(db, fn, "value_len is NULL");
  return Guard(db, [&] {
    std::string v;
    kv::KeyVersion kver;
    kv::Status st = db->client->Get(Bytes(key, key_len), &v, &kver);
    if (!st.ok()) return FromStatus(db, st);
    // One spare NUL byte: text values work as C strings, and malloc(0)
    // never makes an empty value look like a failure.
    auto* p = static_cast<char*>(std::malloc(v.size() + 1));
    if (p == nullptr) {
      return Record(db, RPKV_E_NOMEM, "out of memory copying the value");
    }
    std::memcpy(p, v.data(), v.size());
    p[v.size()] = '\0';
    *value = p;
    *value_len = v.size();
    if (version != nullptr) *version = kver.sequence;
    return RPKV_OK;
  });
}

}  // namespace

extern "C" {

void rpkv_options_init(rpkv_options* opts) {
  if (opts == nullptr) return;
  // Zero is every field's default (rpkv.h): new fields stay compatible.
  std::memset(opts, 0, sizeof(*opts));
  opts->struct_size = sizeof(*opts);
}

int rpkv_connect(const char* server, const char* keyspace,
                 const rpkv_options* opts, rpkv** out) {
  constexpr const char* kFn = "rpkv_connect";
  if (out == nullptr) return Invalid(nullptr, kFn, "out is NULL");
  *out = nullptr;
  if (server == nullptr) return Invalid(nullptr, kFn, "server is NULL");
  if (keyspace == nullptr) return Invalid(nullptr, kFn, "keyspace is NULL");
  rpkv_options o;
  rpkv_options_init(&o);
  if (opts != nullptr) {
    // Version 1 of the struct is the first: anything smaller was not set
    // by rpkv_options_init. A larger struct comes from a newer header;
    // the fields this library knows are at the same offsets.
    if (opts->struct_size < sizeof(rpkv_options)) {
      return Invalid(nullptr, kFn,
                     "opts->struct_size is too small: initialize the "
                     "options with rpkv_options_init()");
    }
    std::memcpy(&o, opts, sizeof(o));
  }
  if (o.wait != RPKV_WAIT_DEFAULT && o.wait != RPKV_WAIT_POLL &&
      o.wait != RPKV_WAIT_BLOCK && o.wait != RPKV_WAIT_ADAPTIVE) {
    return Invalid(nullptr, kFn, "opts->wait is not an rpkv_wait value");
  }
  return Guard(nullptr, [&] {
    kv::ClientOptions co;
    // "etcd://..." names a cluster (its name: rpkv) instead of a server.
    if (std::string_view(server).rfind("etcd://", 0) == 0) {
      co.cluster = server;
    } else {
      co.server = server;
    }
    co.keyspace = keyspace;
    co.create_if_missing = o.create_if_missing != 0;
    if (o.access_key != nullptr) co.access_key = o.access_key;
    if (o.connect_timeout_ms != 0) {
      co.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
    }
    if (o.op_timeout_ms != 0) {
      co.op_timeout = std::chrono::milliseconds(o.op_timeout_ms);
    }
    if (o.wait == RPKV_WAIT_POLL) co.wait = kv::ClientOptions::Wait::kPoll;
    if (o.wait == RPKV_WAIT_BLOCK) co.wait = kv::ClientOptions::Wait::kBlock;
    if (o.wait == RPKV_WAIT_ADAPTIVE) {
      co.wait = kv::ClientOptions::Wait::kAdaptive;
    }
    if (o.spin_us != 0) co.spin_us = o.spin_us;
    auto handle = std::make_unique<rpkv>();
    kv::Result<std::unique_ptr<kv::Client>> client = kv::Client::Connect(co);
    if (!client.ok()) return FromStatus(nullptr, client.status());
    handle->client = std::move(client).value();
    *out = handle.release();
    return RPKV_OK;
  });
}

void rpkv_close(rpkv* db) {
  // ~Client says BYE and disconnects; it reports nothing, and nothing may
  // escape into C.
  try {
    delete db;
  } catch (...) {
  }
}

int rpkv_put(rpkv* db, const void* key, size_t key_len, const void* value,
             size_t value_len) {
  return Write(db, "rpkv_put", key, key_len, value, value_len, {}, nullptr);
}

int rpkv_put_if_absent(rpkv* db, const void* key, size_t key_len,
                       const void* value, size_t value_len, uint64_t* version) {
  kv::WriteOptions wo;
  wo.if_absent = true;
  return Write(db, "rpkv_put_if_absent", key, key_len, value, value_len, wo,
               version);
}

int rpkv_put_if_version(rpkv* db, const void* key, size_t key_len,
                        const void* value, size_t value_len,
                        uint64_t expected_version, uint64_t* version) {
  constexpr const char* kFn = "rpkv_put_if_version";
  if (expected_version == 0) {
    if (version != nullptr) *version = 0;
    return Invalid(db, kFn,
                   "expected_version is 0 (no key has version 0; use "
                   "rpkv_put_if_absent to require absence)");
  }
  kv::WriteOptions wo;
  wo.if_version = expected_version;
  return Write(db, kFn, key, key_len, value, value_len, wo, version);
}

int rpkv_get(rpkv* db, const void* key, size_t key_len, void** value,
             size_t* value_len) {
  return Read(db, "rpkv_get", key, key_len, value, value_len, nullptr);
}

int rpkv_get_versioned(rpkv* db, const void* key, size_t key_len, void** value,
                       size_t* value_len, uint64_t* version) {
  constexpr const char* kFn = "rpkv_get_versioned";
  if (version == nullptr) {
    if (value != nullptr) *value = nullptr;
    if (value_len != nullptr) *value_len = 0;
    return Invalid(db, kFn, "version is NULL");
  }
  return Read(db, kFn, key, key_len, value, value_len, version);
}

int rpkv_exists(rpkv* db, const void* key, size_t key_len) {
  if (int rc = CheckKeyed(db, "rpkv_exists", key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    kv::Result<bool> r = db->client->Exists(Bytes(key, key_len));
    if (!r.ok()) return FromStatus(db, r.status());
    if (*r) return RPKV_OK;
    return Record(db, RPKV_NOT_FOUND, "not_found: the key does not exist");
  });
}

int rpkv_delete(rpkv* db, const void* key, size_t key_len) {
  if (int rc = CheckKeyed(db, "rpkv_delete", key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    return FromStatus(db, db->client->Delete(Bytes(key, key_len)));
  });
}

int rpkv_delete_if_version(rpkv* db, const void* key, size_t key_len,
                           uint64_t expected_version) {
  constexpr const char* kFn = "rpkv_delete_if_version";
  if (int rc = CheckKeyed(db, kFn, key); rc != RPKV_OK) return rc;
  if (expected_version == 0) {
    return Invalid(db, kFn, "expected_version is 0 (no key has version 0)");
  }
  return Guard(db, [&] {
    kv::WriteOptions wo;
    wo.if_version = expected_version;
    return FromStatus(db, db->client->Delete(Bytes(key, key_len), wo));
  });
}

int rpkv_incrby(rpkv* db, const void* key, size_t key_len, int64_t delta,
                int64_t* value) {
  if (value != nullptr) *value = 0;
  if (int rc = CheckKeyed(db, "rpkv_incrby", key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    kv::Result<int64_t> r = db->client->IncrBy(Bytes(key, key_len), delta);
    if (!r.ok()) return FromStatus(db, r.status());
    if (value != nullptr) *value = *r;
    return RPKV_OK;
  });
}

int rpkv_append(rpkv* db, const void* key, size_t key_len, const void* suffix,
                size_t suffix_len, size_t* new_len) {
  constexpr const char* kFn = "rpkv_append";
  if (new_len != nullptr) *new_len = 0;
  if (int rc = CheckKeyed(db, kFn, key); rc != RPKV_OK) return rc;
  if (suffix == nullptr && suffix_len > 0) {
    return Invalid(db, kFn, "suffix is NULL but suffix_len is not 0");
  }
  return Guard(db, [&] {
    kv::Result<uint64_t> r =
        db->client->Append(Bytes(key, key_len), Bytes(suffix, suffix_len));
    if (!r.ok()) return FromStatus(db, r.status());
    if (new_len != nullptr) *new_len = static_cast<size_t>(*r);
    return RPKV_OK;
  });
}

int rpkv_put_ex(rpkv* db, const void* key, size_t key_len, const void* value,
                size_t value_len, int64_t ttl_ms) {
  kv::WriteOptions wo;
  wo.ttl = std::chrono::milliseconds(ttl_ms);
  return Write(db, "rpkv_put_ex", key, key_len, value, value_len, wo, nullptr);
}

int rpkv_expire(rpkv* db, const void* key, size_t key_len, int64_t ttl_ms) {
  if (int rc = CheckKeyed(db, "rpkv_expire", key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    kv::Result<bool> r = db->client->Expire(Bytes(key, key_len),
                                            std::chrono::milliseconds(ttl_ms));
    if (!r.ok()) return FromStatus(db, r.status());
    if (*r) return RPKV_OK;
    return Record(db, RPKV_NOT_FOUND, "not_found: the key does not exist");
  });
}

int rpkv_persist(rpkv* db, const void* key, size_t key_len, int* removed) {
  if (removed != nullptr) *removed = 0;
  if (int rc = CheckKeyed(db, "rpkv_persist", key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    // Persist says false for an absent key and for one without an expiry:
    // Ttl tells them apart first (a race between the two is the same as
    // the key changing right after the call).
    kv::Result<int64_t> t = db->client->Ttl(Bytes(key, key_len));
    if (!t.ok()) return FromStatus(db, t.status());
    if (*t == kv::Client::kTtlAbsent) {
      return Record(db, RPKV_NOT_FOUND, "not_found: the key does not exist");
    }
    kv::Result<bool> r = db->client->Persist(Bytes(key, key_len));
    if (!r.ok()) return FromStatus(db, r.status());
    if (removed != nullptr) *removed = *r ? 1 : 0;
    return RPKV_OK;
  });
}

int rpkv_ttl(rpkv* db, const void* key, size_t key_len, int64_t* ttl_ms) {
  constexpr const char* kFn = "rpkv_ttl";
  if (ttl_ms == nullptr) return Invalid(db, kFn, "ttl_ms is NULL");
  *ttl_ms = kv::Client::kTtlAbsent;
  if (int rc = CheckKeyed(db, kFn, key); rc != RPKV_OK) return rc;
  return Guard(db, [&] {
    kv::Result<int64_t> r = db->client->Ttl(Bytes(key, key_len));
    if (!r.ok()) return FromStatus(db, r.status());
    *ttl_ms = *r;
    if (*r == kv::Client::kTtlAbsent) {
      return Record(db, RPKV_NOT_FOUND, "not_found: the key does not exist");
    }
    return RPKV_OK;
  });
}

int rpkv_scan(rpkv* db, uint64_t cursor, const void* prefix, size_t prefix_len,
              size_t count, rpkv_scan_fn fn, void* arg, uint64_t* next_cursor) {
  constexpr const char* kFn = "rpkv_scan";
  if (next_cursor == nullptr) return Invalid(db, kFn, "next_cursor is NULL");
  *next_cursor = 0;
  if (db == nullptr) return Invalid(nullptr, kFn, "db is NULL");
  if (fn == nullptr) return Invalid(db, kFn, "fn is NULL");
  if (prefix == nullptr && prefix_len > 0) {
    return Invalid(db, kFn, "prefix is NULL but prefix_len is not 0");
  }
  return Guard(db, [&] {
    kv::Result<uint64_t> next =
        db->client->ScanPage(cursor, Bytes(prefix, prefix_len), count,
                             [&](std::string_view k, std::string_view v) {
                               fn(arg, k.data(), k.size(), v.data(), v.size());
                             });
    if (!next.ok()) return FromStatus(db, next.status());
    *next_cursor = *next;
    return RPKV_OK;
  });
}

void rpkv_free(void* p) { std::free(p); }

const char* rpkv_errmsg(const rpkv* db) {
  if (db == nullptr) return t_null_handle_message.c_str();
  try {
    std::lock_guard<std::mutex> lock(db->mu);
    auto it = db->messages.find(std::this_thread::get_id());
    if (it != db->messages.end()) return it->second.c_str();
  } catch (...) {
  }
  return "";
}

const char* rpkv_strerror(int rc) {
  switch (rc) {
    case RPKV_OK:
      return "ok";
    case RPKV_NOT_FOUND:
      return "not found";
    case RPKV_E_INVAL:
      return "invalid argument";
    case RPKV_E_CORRUPTION:
      return "corruption";
    case RPKV_E_IO:
      return "I/O error";
    case RPKV_E_NOSPACE:
      return "no space";
    case RPKV_E_UNAVAILABLE:
      return "server unavailable";
    case RPKV_E_TIMEDOUT:
      return "timed out";
    case RPKV_E_BUSY:
      return "busy";
    case RPKV_E_PERMISSION:
      return "permission denied";
    case RPKV_E_CONDITION_FAILED:
      return "condition failed";
    case RPKV_E_WRONG_SHARD:
      return "wrong shard";
    case RPKV_E_NOMEM:
      return "out of memory";
    case RPKV_E_INTERNAL:
      return "internal error";
    default:
      return "unknown error";
  }
}

uint32_t rpkv_max_value_size(const rpkv* db) {
  if (db == nullptr) return 0;
  return db->client->max_value_size();
}

#define RPKV_STR2(x) #x
#define RPKV_STR(x) RPKV_STR2(x)
const char* rpkv_version(void) {
  return RPKV_STR(RPKV_VERSION_MAJOR) "." RPKV_STR(
      RPKV_VERSION_MINOR) "." RPKV_STR(RPKV_VERSION_PATCH);
}

}  // extern "C"
