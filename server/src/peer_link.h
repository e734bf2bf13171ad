// kv::server::PeerLink — this kvserver as the writer of a shard's copy on
// another node (docs/cluster.md, "Moving a shard: the protocol", steps 2
// and 3; docs/protocol.md, "Peer sessions"): one RPMA connection admitted
// by a peer HELLO (the cluster's peer key, the move's map epoch) and its
// ticket, a grant taken and refilled as it fills, and Copy(): a committed
// record's bytes one-sided written at the grant's tail, then a COMMIT
// with the replica flag, answered by the target's COMMIT_ACK.
//
// Pipelined and ordered: Submit() stages a record, writes it and sends
// its COMMIT without waiting, up to a window of records in flight (the
// target's max in flight, at most kWindow); WaitFor(ticket) returns once
// the target acknowledged every record up to that one. Records reach the
// target, and are committed there, in the order Submit() was called (one
// connection, acknowledgements in request order): a caller that submits
// under a key's lock orders that key's versions. A batch of records costs
// one round trip, not one each. Copy() is Submit + WaitFor.
//
// A failed record fails the link for good (its outcome on the target is
// unknown, and so is every later one's): later calls return the same
// error, and whoever uses the link fails (the move; the commit).
//
// Thread-safety: every method from any thread; a mutex orders the calls
// (the move's forwarded commits and its copier share one ordered link),
// held while waiting for the target. Open and the destructor from one
// thread.
#ifndef KV_SERVER_PEER_LINK_H_
#define KV_SERVER_PEER_LINK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
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
struct rpma_mr_remote;
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
    // The staging ring's first size (a window of records of a few KiB
    // each); it grows for a larger record, up to the largest one.
    size_t ring_bytes = 256 << 10;
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

  // Records in flight at most (and the target's max in flight).
  static constexpr size_t kWindow = 32;

  struct Copied {
    bool stale = false;  // the target held this version or a newer one
  };
  // Copies one committed record (sealed, `length` bytes as in the source's
  // log) and waits until the target committed it. Errors: corruption (the
  // record does not verify: nothing sent), invalid_argument (larger than
  // the target's segment), and — failing the link — what the target
  // answered (its status) or unavailable / timed_out.
  Result<Copied> Copy(const uint8_t* record, size_t length);

  // Stages and sends one record (as Copy) without waiting for the target,
  // unless the window is full or a new grant is needed. Returns its
  // ticket (1, 2, ... in submission order). Errors as Copy's.
  // `background` (a move's copier): the call waits while a foreground one
  // (a commit's forward) waits for the link, so that a bulk copy cannot
  // starve commits of it.
  Result<uint64_t> Submit(const uint8_t* record, size_t length,
                          bool background = false);
  // Returns once the target committed every record up to `ticket`; the
  // link's failure if any record failed.
  Status WaitFor(uint64_t ticket);

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
  Result<uint64_t> SubmitLocked(const uint8_t* record, size_t length);
  // Takes the oldest record's COMMIT_ACK (waiting for it).
  Status ReapOne();
  Status WaitForLocked(uint64_t ticket);
  // Where a record of `length` bytes may be staged now, or -1.
  int64_t RingSpace(uint64_t length) const;
  Status Fail(Status why);
  // The link's lock, taken ahead of background callers when foreground.
  std::unique_lock<std::mutex> Lock(bool background);

  struct InFlight {
    uint64_t ring_offset;  // staged in the ring at this offset
    uint64_t length;
    uint32_t request_id;  // of its COMMIT
  };

  const Options options_;
  mutable std::mutex mu_;
  std::atomic<int> foreground_waiting_{0};
  rpma_peer* peer_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_mr_local* mr_ = nullptr;
  rpma_cq* cq_ = nullptr;
  std::vector<uint8_t> buf_;   // receive slots, send slots
  std::vector<uint8_t> ring_;  // record staging (RingSpace)
  rpma_mr_local* ring_mr_ = nullptr;
  std::vector<std::string> received_;
  bool closed_ = false;
  protocol::Accept accept_;
  protocol::Grant grant_;
  bool have_grant_ = false;
  rpma_mr_remote* remote_ = nullptr;  // the grant's write descriptor
  uint64_t tail_ = 0;  // next free byte of the grant (segment offset)
  uint32_t request_id_ = 0;
  size_t window_ = 1;               // min(kWindow, the target's max in flight)
  std::deque<InFlight> in_flight_;  // oldest first
  uint64_t ring_next_ = 0;          // next staging offset in the ring
  uint64_t submitted_ = 0;          // tickets handed out
  uint64_t acked_ = 0;              // tickets the target committed
  bool last_stale_ = false;         // the ack of ticket acked_
  Status failure_;
  uint64_t records_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace kv::server

#endif  // KV_SERVER_PEER_LINK_H_
