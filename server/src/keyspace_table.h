// kv::server::KeyspaceTable — the keyspaces this server has open, each
// with a protection domain of its own (an rpma_peer: its sessions' queue
// pairs, message buffers and grants live in it, so no connection of
// another keyspace — or one not yet admitted — can reach any of its
// registrations, whatever rkey it guesses) and its one read-only
// registration there (RPMA_MR_USAGE_READ_SRC over Keyspace::region():
// index and log), shared by all its sessions.
//
// Entries are created on first use and live until Close(), so an
// OpenKeyspace* stays valid for every session (sessions end before Close).
// Thread-safety: Get/All/Names are thread-safe.
// Teardown: Close() deregisters every read region, deletes every
// keyspace's peer and drops the keyspace handles; call it after every
// session ended (their connections and grants are objects of those
// peers) and before the pool is closed.
#ifndef KV_SERVER_KEYSPACE_TABLE_H_
#define KV_SERVER_KEYSPACE_TABLE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forwarding_commit_point.h"
#include "kv/protocol.h"
#include "kv/status.h"
#include "kv/store/keyspace.h"
#include "kv/store/pool.h"

struct ibv_context;
struct rpma_peer;
struct rpma_mr_local;

namespace kv::server {

struct OpenKeyspace {
  std::shared_ptr<store::Keyspace> keyspace;
  rpma_peer* peer = nullptr;  // this keyspace's protection domain
  store::Keyspace::Region region;
  rpma_mr_local* read_mr = nullptr;
  uint8_t read_desc[protocol::kDescriptorSize] = {};
  // Sessions bound to it now (Session::Bind to ~Session).
  std::atomic<uint32_t> sessions{0};
};

// Geometry of the keyspaces this server creates.
struct CreateOptions {
  uint32_t segment_size = 4u << 20;
  uint64_t index_capacity = 65536;
};

class KeyspaceTable {
 public:
  // `device`: where every keyspace's peer is made (the listener's).
  KeyspaceTable(store::Pool* pool, ibv_context* device, CreateOptions create);
  ~KeyspaceTable();
  KeyspaceTable(const KeyspaceTable&) = delete;
  KeyspaceTable& operator=(const KeyspaceTable&) = delete;

  // The open keyspace `name`, registering its read region on first use;
  // with `create`, creates it when missing (*created says so; its log
  // gets half of the pool's largest free extent).
  // Errors: not_found (no such keyspace, create not asked), no_space (no
  // room to create it), unavailable (its peer or registration failed),
  // others from the pool.
  Result<OpenKeyspace*> Get(std::string_view name, bool create, bool* created);
  // Creates `name` in the pool without opening it for remote access (the
  // server's `default` at pool creation).
  // `id` 0: the pool picks one. The log gets half of 1/`share` (>= 1) of
  // the pool's largest free extent.
  static Status CreateIn(store::Pool* pool, std::string_view name,
                         const CreateOptions& create, uint32_t id = 0,
                         uint32_t share = 1);
  // A cluster shard (cluster_node.h): ok when the pool has keyspace
  // `name` with id `id`; when missing, created (CreateIn with `share`)
  // only if `create`, else not_found.
  // Errors: corruption (`name` exists with another id), not_found,
  // no_space, others from the pool.
  // A shard's keyspace gets a ForwardingCommitPoint the first time it is
  // ensured (before anything can commit to it: the node serves or
  // receives it only after this returns).
  Status EnsureShard(std::string_view name, uint32_t id, uint32_t share,
                     bool create);
  // The commit point EnsureShard installed on shard `name`; nullptr for a
  // keyspace that is no shard. Lives until Close().
  ForwardingCommitPoint* ShardCommitPoint(std::string_view name);
  // Removes shard `name` from the pool (a move's source after the switch:
  // docs/cluster.md, "Moving a shard: the protocol", step 5): its read
  // registration and protection domain, its commit point, its catalog
  // entry. The caller made sure nothing can reach it: no session is bound
  // (busy otherwise), admission refuses it, no ticket names it.
  // Errors: busy (sessions, or a handle held elsewhere: retry),
  // not_found, the pool's.
  Status DropShard(std::string_view name);
  // Every keyspace opened so far (and not dropped), as handles: a
  // keyspace cannot be dropped while one is held (the cleaner's pass).
  std::vector<std::shared_ptr<store::Keyspace>> All();
  // Names of every keyspace in the pool.
  std::vector<std::string> Names();
  // Stats of every keyspace in the pool (opened by a client or not).
  std::vector<std::pair<std::string, store::KeyspaceStats>> AllStats();
  void Close();

 private:
  Result<OpenKeyspace*> Register(std::shared_ptr<store::Keyspace> ks);

  store::Pool* const pool_;
  ibv_context* const device_;
  const CreateOptions create_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<OpenKeyspace>, std::less<>> open_;
  std::map<std::string, std::unique_ptr<ForwardingCommitPoint>, std::less<>>
      commit_points_;
};

}  // namespace kv::server

#endif  // KV_SERVER_KEYSPACE_TABLE_H_
