#include "kv/cluster/etcd_keys.h"

#include <limits>

#include "kv/cluster/cluster_map.h"

namespace kv::cluster {

namespace {
constexpr size_t kMaxClusterName = 64;
}

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
  auto bad = [&](const char* why) {
    return Status::InvalidArgument(
        "node id '" + std::string(text.substr(0, 32)) + "': " + why);
  };
  if (text.empty()) return bad("empty");
  if (text.size() > 10) return bad("more than 10 digits");
  if (text[0] == '0') return bad("0 or a leading zero");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("not a decimal number");
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > std::numeric_limits<uint32_t>::max()) return bad("above 2^32-1");
  return static_cast<uint32_t>(v);
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
