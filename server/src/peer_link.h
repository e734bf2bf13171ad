// kv::server::PeerLink — this kvserver as the writer of a shard's copy on
// another node (docs/cluster.md, "Moving a shard: the protocol", steps 2
// and 3; docs/protocol.md, "Peer sessions"): one RPMA connection admitted
// by a peer HELLO (the cluster's peer key, the move's map epoch) and its
// ticket, a grant taken and refilled as it fills, and Copy(): a committed
// record's bytes one-sided written at the grant's tail, then a COMMIT
// with the replica flag, answered by the target's COMMIT_ACK.
//
// Synchronous: one record in flight, each Copy a round trip. A failed
// Copy fails the link for good (its outcome on the target is unknown):
// later calls return the same error, and the move that uses it fails.
//
// Thread-safety: Copy from any thread; a mutex runs the calls one at a
// time in the order they take it (the move's forwarded commits and its
// copier share one ordered link). Open and the destructor from one thread.
#ifndef KV_SERVER_PEER_LINK_H_
#define KV_SERVER_PEER_LINK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kv/endpoint.h"
#include "kv/protocol.h"
#include "kv/status.h"

struct rpma_peer;
struct rpma_conn;
struct rpma_mr_local;
struct rpma_cq;

namespace kv::server {

class PeerLink {
 public:
  struct Options {
    Endpoint target;       // the node receiving the copy
    std::string keyspace;  // the shard's pool keyspace, "<ks>.s<shard>"
    std::string peer_key;  // kvserver --peer_key_file's
    uint32_t epoch = 0;    // the map epoch the move began at
    // Bound on each wait (connect, each reply).
    std::chrono::milliseconds timeout{5000};
  };

  // Connects, sends the peer HELLO and reconnects with its ticket.
  // Errors: permission_denied (the target has no or another peer key),
  // wrong_shard (it receives no copy of the shard at that epoch),
  // not_found (it has no such keyspace), unavailable / timed_out (it
  // cannot be reached), each naming the target.
  static Result<std::unique_ptr<PeerLink>> Open(const Options& options);
  ~PeerLink();  // BYE when healthy, then disconnect
  PeerLink(const PeerLink&) = delete;
  PeerLink& operator=(const PeerLink&) = delete;

  struct Copied {
    bool stale = false;  // the target held this version or a newer one
  };
  // Copies one committed record (sealed, `length` bytes as in the source's
  // log) and waits until the target committed it. Errors: corruption (the
  // record does not verify: nothing sent), invalid_argument (larger than
  // the target's segment), and — failing the link — what the target
  // answered (its status) or unavailable / timed_out.
  Result<Copied> Copy(const uint8_t* record, size_t length);

  // ok until a Copy failed (or the connection ended); then that error.
  Status health() const;
  uint64_t records() const;  // copied so far
  uint64_t bytes() const;

 private:
  explicit PeerLink(Options options);
  Status Connect(const protocol::Connect& connect, protocol::Accept* accept);
  void Disconnect();
  Status Send(protocol::Type type, const uint8_t* payload, size_t len);
  // Waits for the next message (header + payload in *payload).
  Status Receive(protocol::Header* h, std::string* payload);
  // Waits for a completion of `opcode` (receives are queued meanwhile).
  Status Wait(int opcode);
  Status Refill(bool for_delete);
  Status CopyLocked(const uint8_t* record, size_t length, Copied* out);
  Status Fail(Status why);

  const Options options_;
  mutable std::mutex mu_;
  rpma_peer* peer_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_mr_local* mr_ = nullptr;
  rpma_cq* cq_ = nullptr;
  std::vector<uint8_t> buf_;  // receive slots, send slot, record staging
  std::vector<std::string> received_;
  bool closed_ = false;
  protocol::Accept accept_;
  protocol::Grant grant_;
  bool have_grant_ = false;
  uint64_t tail_ = 0;  // next free byte of the grant (segment offset)
  uint32_t request_id_ = 0;
  Status failure_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace kv::server

#endif  // KV_SERVER_PEER_LINK_H_
