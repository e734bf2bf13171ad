#include "kv/cluster/etcd_keys.h"

#include <limits>

#include "kv/cluster/cluster_map.h"

namespace kv::cluster {

namespace {

constexpr size_t kMaxClusterName = 64;

// A key may be anything: quote at most a bounded prefix of it.
std::string Bounded(std::string_view s) {
  return std::string(s.substr(0, 64)) + (s.size() > 64 ? "..." : "");
}

// A strict decimal in 0..max: no sign, no leading zero, nothing else.
Result<uint64_t> ParseDecimal(std::string_view what, std::string_view text,
                              uint64_t max, size_t max_digits) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(std::string(what) + " '" +
                                   std::string(text.substr(0, 32)) +
                                   "': " + why);
  };
  if (text.empty()) return bad("empty");
  if (text.size() > max_digits) {
    return bad("more than " + std::to_string(max_digits) + " digits");
  }
  if (text[0] == '0' && text.size() > 1) return bad("a leading zero");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("not a decimal number");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) return bad("above " + std::to_string(max));
  return v;
}

}  // namespace

Status ValidateClusterName(std::string_view name) {
  if (name.empty() || name.size() > kMaxClusterName) {
    return Status::InvalidArgument(
        "cluster name must be 1.." + std::to_string(kMaxClusterName) +
        " characters, got " + std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      return Status::InvalidArgument("cluster name '" + std::string(name) +
                                     "': only a-z, 0-9, '_' and '-' allowed");
    }
  }
  return Status::Ok();
}

Result<uint32_t> ParseNodeId(std::string_view text) {
  if (text == "0") {
    return Status::InvalidArgument("node id '0': 0 is not a node");
  }
  Result<uint64_t> v =
      ParseDecimal("node id", text, std::numeric_limits<uint32_t>::max(), 10);
  if (!v.ok()) return v.status();
  return static_cast<uint32_t>(*v);
}

Result<uint32_t> ParseShardId(std::string_view text) {
  Result<uint64_t> v = ParseDecimal("shard id", text, kMaxShardId, 4);
  if (!v.ok()) return v.status();
  return static_cast<uint32_t>(*v);
}

Result<EtcdKeys> EtcdKeys::ForCluster(std::string_view cluster_name) {
  KV_RETURN_IF_ERROR(ValidateClusterName(cluster_name));
  std::string name(cluster_name);
  return EtcdKeys(name, "/rpkv/" + name + "/");
}

std::string EtcdKeys::node(uint32_t node_id) const {
  return nodes_prefix() + std::to_string(node_id);
}

Result<uint32_t> EtcdKeys::NodeIdOf(std::string_view key) const {
  const std::string prefix = nodes_prefix();
  if (!key.starts_with(prefix)) {
    return Status::InvalidArgument("etcd key is not under " + prefix);
  }
  return ParseNodeId(key.substr(prefix.size()));
}

std::string EtcdKeys::drain(uint32_t node_id) const {
  return drain_prefix() + std::to_string(node_id);
}

Result<uint32_t> EtcdKeys::DrainNodeOf(std::string_view key) const {
  const std::string prefix = drain_prefix();
  if (!key.starts_with(prefix)) {
    return Status::InvalidArgument("etcd key is not under " + prefix);
  }
  return ParseNodeId(key.substr(prefix.size()));
}

std::string EtcdKeys::move(std::string_view keyspace, uint32_t shard) const {
  return moves_prefix() + std::string(keyspace) + "/" + std::to_string(shard);
}

std::string EtcdKeys::move_progress(std::string_view keyspace,
                                    uint32_t shard) const {
  return move_progress_prefix() + std::string(keyspace) + "/" +
         std::to_string(shard);
}

Result<ShardRef> EtcdKeys::MoveOf(std::string_view key) const {
  const std::string prefix = moves_prefix();
  if (!key.starts_with(prefix)) {
    return Status::InvalidArgument("etcd key is not under " + prefix);
  }
  const std::string_view rest = key.substr(prefix.size());
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("etcd key " + prefix + Bounded(rest) +
                                   " does not name a move: " + why);
  };
  // Keyspace names hold no '/': the first one ends the name.
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return bad("no /<shard> after it");
  const std::string_view name = rest.substr(0, slash);
  if (Status st = ValidateClusterKeyspaceName(name); !st.ok()) {
    return bad(st.message());
  }
  Result<uint32_t> shard = ParseShardId(rest.substr(slash + 1));
  if (!shard.ok()) return bad(shard.status().message());
  return ShardRef{std::string(name), *shard};
}

std::string EtcdKeys::failed_backup(std::string_view keyspace, uint32_t shard,
                                    uint32_t node) const {
  return failed_backups_prefix() + std::string(keyspace) + "/" +
         std::to_string(shard) + "/" + std::to_string(node);
}

Result<EtcdKeys::FailedBackup> EtcdKeys::FailedBackupOf(
    std::string_view key) const {
  const std::string prefix = failed_backups_prefix();
  if (!key.starts_with(prefix)) {
    return Status::InvalidArgument("etcd key is not under " + prefix);
  }
  const size_t last = key.rfind('/');
  if (last < prefix.size()) {
    return Status::InvalidArgument("etcd key " + Bounded(key) +
                                   " names no /<node> after the shard");
  }
  // "<keyspace>/<shard>" parses as a move's key does.
  Result<ShardRef> shard =
      MoveOf(moves_prefix() +
             std::string(key.substr(prefix.size(), last - prefix.size())));
  if (!shard.ok()) return shard.status();
  Result<uint32_t> node = ParseNodeId(key.substr(last + 1));
  if (!node.ok()) return node.status();
  return FailedBackup{std::move(*shard), *node};
}

std::string EtcdKeys::keyspace(std::string_view keyspace) const {
  return keyspaces_prefix() + std::string(keyspace);
}

Result<std::string> EtcdKeys::KeyspaceNameOf(std::string_view key) const {
  const std::string prefix = keyspaces_prefix();
  if (!key.starts_with(prefix)) {
    return Status::InvalidArgument("etcd key is not under " + prefix);
  }
  const std::string_view name = key.substr(prefix.size());
  if (Status st = ValidateClusterKeyspaceName(name); !st.ok()) {
    // The key may be anything: do not echo more than a bounded prefix.
    return Status::InvalidArgument(
        "etcd key " + prefix + std::string(name.substr(0, 64)) +
        (name.size() > 64 ? "..." : "") +
        " does not name a keyspace: " + st.message());
  }
  return std::string(name);
}

}  // namespace kv::cluster
