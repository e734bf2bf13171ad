// kv::server::Admission — who may connect to which keyspace.
//
// Two steps, both pure decisions (no connection is touched here):
//  1. ParseConnect: the connect private data (kv::protocol::DecodeConnect)
//     → a named keyspace, "HELLO follows", or a refusal (bad magic /
//     version → kBadMagic / kBadVersion, anything else malformed).
//  2. Resolve: name + create flag + access key (only a HELLO carries one)
//     → the open keyspace, or a refusal: a keyspace listed in the access
//     keys needs the right key (checked before its existence, so a
//     refusal does not tell whether it exists); an unknown keyspace is
//     created only with --allow_create and the create flag.
// Thread-safety: thread-safe (KeyspaceTable locks).
#ifndef KV_SERVER_ADMISSION_H_
#define KV_SERVER_ADMISSION_H_

#include <optional>
#include <string>
#include <string_view>

#include "access_keys.h"
#include "auth_delay.h"
#include "keyspace_table.h"
#include "kv/protocol.h"
#include "shard_table.h"

namespace kv::server {

struct Refusal {
  protocol::Admit admit = protocol::Admit::kServerError;
  std::string reason;  // for the accept pdata (cut to 59 bytes) and the log
};

struct ConnectRequest {
  protocol::Connect connect;
  bool hello() const { return connect.flags & protocol::kConnectHello; }
  // Admitted by an earlier HELLO: connect.name holds the ticket's bytes.
  bool ticket() const { return connect.flags & protocol::kConnectTicket; }
  bool create() const { return connect.flags & protocol::kConnectCreate; }
};

class Admission {
 public:
  // `delay` (may be null: none) slows down wrong access keys.
  // `shards` (may be null: a single server): in a cluster, only the
  // shards this node serves are admitted (wrong_shard otherwise) and no
  // client creates a keyspace.
  Admission(KeyspaceTable* keyspaces, const AccessKeys* keys, bool allow_create,
            AuthDelay* delay = nullptr, const ShardTable* shards = nullptr);

  // Decodes connect private data (`data` may be null: none was sent).
  static bool ParseConnect(const void* data, size_t len, ConnectRequest* out,
                           Refusal* refusal);

  // The keyspace a client may use, or nullptr with *refusal filled.
  // `access_key` is set only for a HELLO (a connect never carries one).
  // A wrong key returns only after the AuthDelay's wait (on the caller's
  // thread, a session's).
  OpenKeyspace* Resolve(std::string_view name, bool create,
                        std::optional<std::string_view> access_key,
                        Refusal* refusal);

  // The cluster's peer key (kvserver --peer_key_file); empty (the
  // default): no peer is admitted. Set before the first connection.
  void set_peer_key(std::string key) { peer_key_ = std::move(key); }
  // A peer kvserver's HELLO (kHelloPeer) for shard `name` at map epoch
  // `epoch`: the peer key must match (a wrong one waits the AuthDelay),
  // this node must be a cluster node receiving a copy of that shard at
  // that epoch (ShardTable::CheckPeer), and the shard's keyspace must
  // exist (the node made it when the copy began). The keyspace, or
  // nullptr with *refusal: access_denied (no peer key here, a wrong one),
  // wrong_shard, unknown_keyspace.
  OpenKeyspace* ResolvePeer(std::string_view name, std::string_view key,
                            uint32_t epoch, Refusal* refusal);

 private:
  KeyspaceTable* const keyspaces_;
  const AccessKeys* const keys_;
  const bool allow_create_;
  AuthDelay* const delay_;
  const ShardTable* const shards_;
  std::string peer_key_;
};

// Accept private data for a refusal (and the WELCOME of a refused HELLO).
protocol::Accept RefusalAccept(const Refusal& r, uint64_t session_id);

}  // namespace kv::server

#endif  // KV_SERVER_ADMISSION_H_
