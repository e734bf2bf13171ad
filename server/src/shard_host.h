// kv::server::ShardHost — what a cluster node's shard moves need of the
// node's server (Server implements it; MoveManager uses it): shard
// keyspaces made, reached locally, their commit points, their sessions
// ended and the keyspaces dropped.
// Thread-safety: every method from any thread.
#ifndef KV_SERVER_SHARD_HOST_H_
#define KV_SERVER_SHARD_HOST_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "forwarding_commit_point.h"
#include "kv/status.h"
#include "kv/store/keyspace.h"

namespace kv::server {

class ShardHost {
 public:
  virtual ~ShardHost() = default;
  // KeyspaceTable::EnsureShard.
  virtual Status EnsureShard(std::string_view name, uint32_t id, uint32_t share,
                             bool create) = 0;
  virtual Result<std::shared_ptr<store::Keyspace>> LocalKeyspace(
      std::string_view name) = 0;
  virtual ForwardingCommitPoint* ShardCommitPoint(std::string_view name) = 0;
  virtual Status EndShardSessions(std::string_view name,
                                  std::chrono::milliseconds timeout) = 0;
  virtual Status DropShard(std::string_view name) = 0;
};

}  // namespace kv::server

#endif  // KV_SERVER_SHARD_HOST_H_
