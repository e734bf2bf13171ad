// kv::server::ServerOptions: what kvserver is told on its command line,
// validated before anything is opened. Thread-safety: a plain value.
#ifndef KV_SERVER_SERVER_OPTIONS_H_
#define KV_SERVER_SERVER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "kv/endpoint.h"
#include "kv/status.h"

namespace kv::server {

class ShardTable;

struct ServerOptions {
  std::string pool_path;
  uint64_t pool_size = 1ull << 30;  // used only when the pool is created
  Endpoint listen{"127.0.0.1", "7400"};
  std::string provider = "auto";  // auto | tcp | verbs (RPMA_PROVIDER)
  // Geometry of keyspaces this server creates (default, or a client's
  // create-if-missing).
  uint32_t segment_size = 4u << 20;
  uint64_t index_capacity = 65536;
  uint32_t max_connections = 256;
  bool allow_create = false;
  std::string access_keys_path;  // empty: no access control
  // The cluster's peer key file (access_keys.h, LoadPeerKey): peer
  // kvservers that present it may write copies of the shards this node
  // receives. Empty: no peer is admitted.
  std::string peer_key_path;
  double cleaner_threshold = 0.5;  // dead / (live + dead) that starts it
  uint16_t max_inflight = 32;      // messages a client may have outstanding
  // Resource bounds (server/README.md, "Limits"): what one client can
  // make the server hold.
  std::chrono::milliseconds hello_timeout{2000};
  uint32_t max_pending_hello = 32;  // connections waiting for HELLO
  // An admitted connection with no message for this long is ended and
  // its grant returned (0: never).
  std::chrono::milliseconds idle_timeout{300000};
  // REFILL token bucket per connection: refill_rate grants per second,
  // bursts of up to refill_burst.
  uint32_t refill_rate = 20;
  uint32_t refill_burst = 8;
  // At most this percentage of a keyspace's segments open (granted) at
  // once; the rest stays for the refills of writers holding a grant.
  uint32_t grant_share_percent = 50;
  // A wrong access key's refusal waits auth_delay, growing with recent
  // failures up to auth_delay_max (0: no delay).
  std::chrono::milliseconds auth_delay{200};
  std::chrono::milliseconds auth_delay_max{2000};
  uint32_t spin_us = 0;  // worker busy-poll before blocking (0: block)
  uint32_t workers = 2;  // threads driving sessions (kvserver: cores)
  // Group commit: the COMMITs a session reaps together share one persist
  // point (server/README.md, "Group commit").
  bool group_commit = true;
  // INFO answers with every keyspace's name and stats; by default a
  // session sees only its own keyspace (server/README.md, "Isolation").
  bool info_all_keyspaces = false;
  // How long a HELLO-admitted client's reconnect ticket stays good.
  std::chrono::milliseconds ticket_lifetime{10000};
  // A cluster node (kvserver --cluster): the shards it serves; admission,
  // COMMIT and REFILL are checked against it (shard_table.h). nullptr: a
  // single server, no checks. Not owned; outlives the Server.
  const ShardTable* shards = nullptr;
};

// Parses a byte size: a number with an optional K, M, G or T suffix
// (powers of 1024; "KiB", "MB" etc. accepted). invalid_argument otherwise.
Result<uint64_t> ParseByteSize(const std::string& text);

// Builds options from raw flag values.
// Errors: invalid_argument for an empty pool path, a pool size below
// 16 MiB, or a malformed listen address.
Result<ServerOptions> MakeServerOptions(const std::string& pool_path,
                                        uint64_t pool_size,
                                        const std::string& listen);

// Checks the rest of the options (provider, segment size, limits).
// Errors: invalid_argument naming the flag.
Status ValidateServerOptions(const ServerOptions& o);

}  // namespace kv::server

#endif  // KV_SERVER_SERVER_OPTIONS_H_
