#include "admission.h"

#include "log.h"

namespace kv::server {
namespace {

// Drops the decoder's "connect private data: " prefix: the reason field
// holds 59 bytes, and the status already says it is about the connect.
std::string ShortReason(const std::string& message) {
  static constexpr std::string_view kPrefix = "connect private data: ";
  if (message.rfind(kPrefix, 0) == 0) return message.substr(kPrefix.size());
  if (message.rfind("connect: ", 0) == 0) return message.substr(9);
  return message;
}

}  // namespace

Admission::Admission(KeyspaceTable* keyspaces, const AccessKeys* keys,
                     bool allow_create, AuthDelay* delay,
                     const ShardTable* shards)
    : keyspaces_(keyspaces),
      keys_(keys),
      allow_create_(allow_create),
      delay_(delay),
      shards_(shards) {}

bool Admission::ParseConnect(const void* data, size_t len, ConnectRequest* out,
                             Refusal* refusal) {
  // A NIC delivers the private data zero-padded: all zeros is none sent.
  const auto* bytes = static_cast<const uint8_t*>(data);
  bool all_zero = true;
  for (size_t i = 0; data != nullptr && i < len && all_zero; i++) {
    all_zero = bytes[i] == 0;
  }
  if (data == nullptr || len == 0 || all_zero) {
    refusal->admit = protocol::Admit::kMalformed;
    refusal->reason = "no private data (not an rpkv client?)";
    return false;
  }
  Status st = protocol::DecodeConnect(data, len, &out->connect);
  if (st.ok()) return true;
  // The decoder checks magic, then version, then the rest: classify by
  // the same fields so that the status names the first problem.
  const auto* p = static_cast<const uint8_t*>(data);
  if (len >= 4 && protocol::Get32(p, 0) != protocol::kMagic) {
    refusal->admit = protocol::Admit::kBadMagic;
  } else if (len >= 5 && p[4] != protocol::kVersion) {
    refusal->admit = protocol::Admit::kBadVersion;
  } else {
    refusal->admit = protocol::Admit::kMalformed;
  }
  refusal->reason = ShortReason(st.message());
  return false;
}

OpenKeyspace* Admission::Resolve(std::string_view name, bool create,
                                 std::optional<std::string_view> access_key,
                                 Refusal* refusal) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (keys_ != nullptr && keys_->Protected(name)) {
    if (!access_key.has_value() || access_key->empty()) {
      refusal->admit = protocol::Admit::kAccessDenied;
      refusal->reason = "keyspace " + quoted + " needs an access key";
      return nullptr;
    }
    if (!keys_->Check(name, *access_key)) {
      if (delay_ != nullptr) delay_->FailAndWait();
      refusal->admit = protocol::Admit::kAccessDenied;
      refusal->reason = "wrong access key for keyspace " + quoted;
      return nullptr;
    }
  }
  if (shards_ != nullptr) {
    // A cluster node serves the shards the map gives it, which it made
    // itself (cluster_node.h); a client names one and creates nothing.
    Status owned = shards_->CheckAdmit(name, nullptr);
    if (!owned.ok()) {
      refusal->admit = protocol::Admit::kWrongShard;
      refusal->reason = owned.message();
      return nullptr;
    }
    create = false;
  }
  bool created = false;
  Result<OpenKeyspace*> ks =
      keyspaces_->Get(name, create && allow_create_, &created);
  if (ks.ok()) {
    if (created) Logf("created keyspace %s (client request)", quoted.c_str());
    return *ks;
  }
  const Status& st = ks.status();
  if (st.IsNotFound()) {
    refusal->admit = protocol::Admit::kUnknownKeyspace;
    refusal->reason =
        create ? "no keyspace " + quoted + " and server lacks --allow_create"
               : "no keyspace " + quoted;
  } else if (st.IsNoSpace()) {
    refusal->admit = protocol::Admit::kNoSpace;
    refusal->reason = "no room to create keyspace " + quoted;
  } else {
    refusal->admit = protocol::Admit::kServerError;
    refusal->reason = st.message();
  }
  return nullptr;
}

OpenKeyspace* Admission::ResolvePeer(std::string_view name,
                                     std::string_view key, uint32_t epoch,
                                     Refusal* refusal) {
  const std::string quoted = "'" + std::string(name) + "'";
  if (peer_key_.empty()) {
    refusal->admit = protocol::Admit::kAccessDenied;
    refusal->reason = "this server admits no peer (kvserver --peer_key_file)";
    return nullptr;
  }
  if (!ConstantTimeEqual(peer_key_, key)) {
    if (delay_ != nullptr) delay_->FailAndWait();
    refusal->admit = protocol::Admit::kAccessDenied;
    refusal->reason = "wrong peer key";
    return nullptr;
  }
  Status incoming = shards_ != nullptr ? shards_->CheckPeer(name, epoch)
                                       : Status::WrongShard(
                                             "a single server takes no copy "
                                             "of a shard from a peer");
  if (!incoming.ok()) {
    refusal->admit = protocol::Admit::kWrongShard;
    refusal->reason = incoming.message();
    return nullptr;
  }
  bool created = false;
  Result<OpenKeyspace*> ks = keyspaces_->Get(name, false, &created);
  if (ks.ok()) return *ks;
  refusal->admit = ks.status().IsNotFound() ? protocol::Admit::kUnknownKeyspace
                                            : protocol::Admit::kServerError;
  refusal->reason = ks.status().IsNotFound()
                        ? "no keyspace " + quoted + " for the copy"
                        : ks.status().message();
  return nullptr;
}

protocol::Accept RefusalAccept(const Refusal& r, uint64_t session_id) {
  protocol::Accept a;
  a.admit = r.admit;
  a.session_id = session_id;
  a.reason = r.reason;
  return a;
}

}  // namespace kv::server
