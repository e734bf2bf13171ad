// An in-process stand-in for kv::Client (one std::map per process), so
// that kvcli's shell mechanics — prompt, history, completion, Ctrl-D,
// quoting, exit codes — are tested without a server (kvcli_fake). Real
// client behaviour is tested against kvserver in kvcli_test.
//
// Fakes the client's documented errors the shell reacts to: a server
// address with port 1 refuses ("connection refused — is kvserver
// running?"), keyspace "missing" does not exist unless create_if_missing,
// keyspace "secret" wants access key "k", values over 1 KiB are too large.
// Expiries run on this process's steady clock (a fake has no server).
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

#include "kv/client/client.h"
#include "kv/record_format.h"

namespace kv {

// The fake touches only what client.h declares: the private constructor,
// options_ and the (here empty) state types.
class Connection {};
class ClientState {};
class Router {};  // the fake has no cluster mode

namespace {
constexpr uint32_t kMaxValue = 1024;
uint64_t g_sequence = 0;

std::map<std::string, std::string>& Keys(const ClientOptions& o) {
  static std::map<std::string, std::map<std::string, std::string>> all;
  return all[o.keyspace];
}

// Expiry per key (steady-clock ms); no entry: none.
std::map<std::string, int64_t>& Expiries(const ClientOptions& o) {
  static std::map<std::string, std::map<std::string, int64_t>> all;
  return all[o.keyspace];
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Drops the key when it has expired.
void DropIfExpired(const ClientOptions& o, const std::string& key) {
  auto it = Expiries(o).find(key);
  if (it == Expiries(o).end() || it->second > NowMs()) return;
  Expiries(o).erase(it);
  Keys(o).erase(key);
}

// INFO's index_load: used / slots with three digits, as kvserver prints it.
std::string Ratio(uint64_t part, uint64_t whole) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3f",
           static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}
}  // namespace

void Batch::Put(std::string_view key, std::string_view value,
                const WriteOptions& o) {
  ops_.push_back({Op::kPut,
                  std::string(key),
                  std::string(value),
                  o.if_absent,
                  o.if_version,
                  {},
                  o.ttl});
}
void Batch::Get(std::string_view key) {
  ops_.push_back({Op::kGet, std::string(key), "", false, 0, {}, {}});
}
void Batch::Delete(std::string_view key, const WriteOptions& o) {
  ops_.push_back({Op::kDelete,
                  std::string(key),
                  "",
                  o.if_absent,
                  o.if_version,
                  {},
                  o.ttl});
}
void Batch::Clear() { ops_.clear(); }

Client::Client(ClientOptions options, std::unique_ptr<Connection> conn)
    : options_(std::move(options)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& o) {
  const size_t colon = o.server.rfind(':');
  if (colon == std::string::npos || colon + 1 == o.server.size()) {
    return Status::InvalidArgument("server address '" + o.server +
                                   "' must be HOST:PORT");
  }
  if (o.server.substr(colon + 1) == "1") {
    return Status::Unavailable("cannot connect to " + o.server +
                               ": connection refused — is kvserver running?");
  }
  if (o.keyspace == "missing" && !o.create_if_missing) {
    return Status::NotFound("keyspace 'missing' does not exist on " + o.server +
                            " — connect with --create (server needs "
                            "--allow_create) or run kvadmin keyspace create");
  }
  if (o.keyspace == "secret" && o.access_key != "k") {
    return Status::PermissionDenied(
        "keyspace 'secret': access key " +
        std::string(o.access_key.empty() ? "missing" : "wrong"));
  }
  return std::unique_ptr<Client>(new Client(o, std::make_unique<Connection>()));
}

Status Client::Put(std::string_view key, std::string_view value,
                   const WriteOptions& o) {
  if (key.empty() || key.size() > 1024) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes: a key is 1..1024 bytes");
  }
  if (value.size() > kMaxValue) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes is over the keyspace's limit of " +
                                   std::to_string(kMaxValue));
  }
  if (o.ttl) KV_RETURN_IF_ERROR(record_format::CheckTtl(o.ttl->count()));
  DropIfExpired(options_, std::string(key));
  if (o.if_version != 0 && Keys(options_).count(std::string(key)) == 0) {
    return Status::ConditionFailed("the key does not exist");
  }
  Keys(options_)[std::string(key)] = std::string(value);
  if (o.ttl) {
    Expiries(options_)[std::string(key)] = NowMs() + o.ttl->count();
  } else {
    Expiries(options_).erase(std::string(key));
  }
  if (o.version) o.version->sequence = ++g_sequence;
  return Status::Ok();
}

Status Client::Get(std::string_view key, std::string* value,
                   KeyVersion* version) {
  DropIfExpired(options_, std::string(key));
  auto& m = Keys(options_);
  auto it = m.find(std::string(key));
  if (it == m.end()) return Status::NotFound("key not found");
  *value = it->second;
  if (version != nullptr) {
    *version = KeyVersion{};
    version->sequence = g_sequence;
    auto e = Expiries(options_).find(std::string(key));
    if (e != Expiries(options_).end()) {
      version->expires_at_ms = static_cast<uint64_t>(e->second);
      version->ttl_ms = e->second - NowMs();
    }
  }
  return Status::Ok();
}

Result<int64_t> Client::Ttl(std::string_view key) {
  std::string value;
  KeyVersion v;
  Status st = Get(key, &value, &v);
  if (st.IsNotFound()) return kTtlAbsent;
  if (!st.ok()) return st;
  return v.ttl_ms;
}

Status Client::Delete(std::string_view key, const WriteOptions&,
                      bool* had_previous) {
  DropIfExpired(options_, std::string(key));
  Expiries(options_).erase(std::string(key));
  const bool had = Keys(options_).erase(std::string(key)) > 0;
  if (had_previous) *had_previous = had;
  return Status::Ok();
}

Result<bool> Client::Exists(std::string_view key) {
  return Keys(options_).count(std::string(key)) > 0;
}

Status Client::Execute(Batch* batch) {
  for (Batch::Entry& e : batch->ops_) {
    if (e.op == Batch::Op::kPut) {
      e.result.status = Put(e.key, e.value);
    } else if (e.op == Batch::Op::kGet) {
      e.result.status = Get(e.key, &e.result.value);
    } else {
      e.result.status = Delete(e.key, {}, &e.result.had_previous);
    }
  }
  return Status::Ok();
}

Status Client::Scan(
    std::string_view prefix, size_t limit,
    const std::function<bool(std::string_view, std::string_view)>& fn) {
  size_t n = 0;
  for (const auto& [k, v] : Keys(options_)) {
    if (k.compare(0, prefix.size(), prefix) != 0) continue;
    if (limit != 0 && n == limit) break;
    n++;
    if (!fn(k, v)) break;
  }
  return Status::Ok();
}

// The cursor is a position in the map's order (a fake's "hash order").
Result<uint64_t> Client::ScanPage(
    uint64_t cursor, std::string_view prefix, size_t count,
    const std::function<void(std::string_view, std::string_view)>& fn) {
  const auto& m = Keys(options_);
  if (cursor > m.size()) return Status::InvalidArgument("bad scan cursor");
  uint64_t at = 0;
  size_t n = 0;
  for (const auto& [k, v] : m) {
    if (at++ < cursor) continue;
    if (k.compare(0, prefix.size(), prefix) == 0) {
      fn(k, v);
      n++;
    }
    if (n >= (count == 0 ? 100 : count)) return at < m.size() ? at : 0;
  }
  return uint64_t{0};
}

Result<std::string> Client::Info(InfoTopic topic) {
  switch (topic) {
    case InfoTopic::kKeyspaces:
      return std::string("default\nmissing\nsecret\n");
    case InfoTopic::kStats:
      return std::string(
          "connections 1\nputs " + std::to_string(g_sequence) + "\nkeyspace." +
          options_.keyspace + ".keys " + std::to_string(Keys(options_).size()) +
          "\nkeyspace." + options_.keyspace +
          ".log_bytes_used 65536\nkeyspace." + options_.keyspace +
          ".log_bytes 1048576\nkeyspace." + options_.keyspace +
          ".index_slots_used " + std::to_string(Keys(options_).size()) +
          "\nkeyspace." + options_.keyspace + ".index_slots 1032\nkeyspace." +
          options_.keyspace + ".index_buckets 128\nkeyspace." +
          options_.keyspace + ".index_growths 2\nkeyspace." +
          options_.keyspace + ".index_load " +
          Ratio(Keys(options_).size(), 1032) + "\n");
    case InfoTopic::kServer:
      return std::string("provider fake\ngranularity memory\n");
  }
  return Status::InvalidArgument("topic");
}

Result<std::chrono::nanoseconds> Client::Ping() {
  return std::chrono::nanoseconds(1500);
}

uint32_t Client::max_value_size() const { return kMaxValue; }

}  // namespace kv
