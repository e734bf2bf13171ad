// kv::server::Server — kvserver's lifecycle: opens (or creates) the pool,
// the RPMA peer and the listening endpoint; admits connections and
// hands each session to the least loaded of a fixed set of workers
// (worker.h); runs the cleaner; shuts down cleanly.
//
// Open() → Run(stop_fd) (returns when stop_fd becomes readable) → the
// destructor, whose order is the shutdown: stop accepting, let every
// session finish the messages it has (in-flight commits complete), return
// its grant and disconnect; stop the cleaner; deregister the read
// regions; delete the peer; close the pool (marked clean).
// Thread-safety: Open/Run/destructor from one thread.
#ifndef KV_SERVER_SERVER_H_
#define KV_SERVER_SERVER_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "access_keys.h"
#include "admission.h"
#include "auth_delay.h"
#include "cleaner_policy.h"
#include "grant_quota.h"
#include "keyspace_table.h"
#include "kv/server/server_options.h"
#include "kv/status.h"
#include "kv/store/pool.h"
#include "refusal_log.h"
#include "session.h"
#include "shard_host.h"
#include "stats.h"
#include "tickets.h"
#include "worker.h"

struct ibv_context;
struct rpma_peer;
struct rpma_ep;
struct rpma_conn;
struct rpma_conn_cfg;
struct rpma_conn_req;

namespace kv::server {

// The smallest pool a server with `o` can create: one that holds its
// default keyspace.
uint64_t MinPoolSizeFor(const ServerOptions& o);

class Server : public ShardHost {
 public:
  // Errors: busy (another process holds the pool), corruption / io_error
  // (pool), unavailable (no RDMA device / cannot listen: message starts
  // "cannot listen"), invalid_argument / permission_denied (access keys).
  static Result<std::unique_ptr<Server>> Open(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Accepts connections until stop_fd is readable. Logs the ready line
  // first.
  void Run(int stop_fd);
  // A cluster shard this node is given (KeyspaceTable::EnsureShard).
  // Thread-safe.
  Status EnsureShard(std::string_view name, uint32_t id, uint32_t share,
                     bool create) override {
    return keyspaces_->EnsureShard(name, id, share, create);
  }

  // The pool keyspace `name` for this node's own use (a shard move's
  // copier and its target's preparation), opened for remote access on
  // first use like any admitted keyspace. Thread-safe. Errors as
  // KeyspaceTable::Get without create (not_found, ...).
  Result<std::shared_ptr<store::Keyspace>> LocalKeyspace(
      std::string_view name) override;

  // Ends every session of keyspace `name` (a shard handed off: docs/
  // cluster.md, "Moving a shard: the protocol", step 4) and waits until
  // they are gone, so that no connection can read it one-sided any more.
  // Admission refuses new ones (the ShardTable). Errors: timed_out when
  // some remain after `timeout`.
  Status EndShardSessions(std::string_view name,
                          std::chrono::milliseconds timeout) override;
  // Removes shard `name` from this node's pool once it is another node's
  // (KeyspaceTable::DropShard), its tickets first. Errors: busy (retry).
  Status DropShard(std::string_view name) override;
  // The commit point of shard `name` (KeyspaceTable::ShardCommitPoint).
  ForwardingCommitPoint* ShardCommitPoint(std::string_view name) override {
    return keyspaces_->ShardCommitPoint(name);
  }

  // The address actually listened on.
  const Endpoint& endpoint() const { return options_.listen; }

 private:
  explicit Server(const ServerOptions& options);
  Status OpenPool();
  Status OpenRpma();
  void AcceptPending();
  void Admit(rpma_conn_req* req);
  // Accepts with a refusal status and disconnects once it is established.
  void Refuse(rpma_conn_req* req, const Refusal& r, uint64_t session_id);
  void ReapClosing(bool all);
  void Shutdown();

  struct Closing {
    rpma_conn* conn = nullptr;
    std::chrono::steady_clock::time_point deadline;
    bool disconnected = false;
  };

  ServerOptions options_;
  std::unique_ptr<store::Pool> pool_;
  std::unique_ptr<AccessKeys> keys_;
  Stats stats_;
  ibv_context* device_ = nullptr;
  // The listener's protection domain: it holds no registration a remote
  // peer can reach (only sessions' message buffers, local access), so a
  // connection not yet admitted to a keyspace can touch nothing.
  rpma_peer* peer_ = nullptr;
  rpma_ep* ep_ = nullptr;
  rpma_conn_cfg* cfg_ = nullptr;
  std::unique_ptr<KeyspaceTable> keyspaces_;
  std::unique_ptr<AuthDelay> auth_delay_;
  std::unique_ptr<Tickets> tickets_;
  std::unique_ptr<RefusalLog> refusal_log_;
  std::unique_ptr<GrantQuotas> grant_quotas_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<CleanerPolicy> cleaner_;
  std::string provider_;
  int session_stop_fd_ = -1;  // eventfd, written once at shutdown
  // The client workers (--workers), then the peer sessions' own worker
  // when there is a peer key.
  std::vector<std::unique_ptr<Worker>> workers_;
  size_t client_workers_ = 0;
  // Sessions still waiting for (or refused after) their HELLO.
  std::atomic<uint64_t> pending_hellos_{0};
  std::vector<Closing> closing_;
  uint64_t next_session_id_ = 1;
  bool shut_down_ = false;
};

}  // namespace kv::server

#endif  // KV_SERVER_SERVER_H_
