// kv::Connection — one admitted RPMA connection to a kvserver keyspace:
// the peer, the connection, the remote regions (read-only keyspace, write
// grant) and the locally registered buffers (message slots and a data
// arena for records and reads). Posts operations and reaps completions;
// knows nothing of keys (the Engine drives it).
//
// Thread-safety: none; the Client serializes all use.
// Buffer ownership: a posted read's destination and a posted write's
// source (arena bytes) belong to the provider until the operation's
// completion (reads) or the following commit's acknowledgement (writes)
// has been reaped; a send slot until its send completion.
#ifndef KV_CLIENT_SRC_CONNECTION_H_
#define KV_CLIENT_SRC_CONNECTION_H_

#include <librpma.h>
#include <rpma_ext.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/client/client.h"
#include "kv/index_lookup.h"
#include "kv/protocol.h"
#include "kv/status.h"

namespace kv {

class Connection {
 public:
  // Connects, runs admission (HELLO when needed) and registers buffers.
  // Errors as Client::Connect.
  static Result<std::unique_ptr<Connection>> Open(const ClientOptions& o);
  // Sends BYE (returning the grant's tail) when the connection is healthy,
  // then disconnects and releases everything.
  ~Connection();

  // The accept data as admitted. Its bucket_count is the index's size at
  // admission; the index may have grown since: use geometry().
  const protocol::Accept& accept() const { return accept_; }
  // The keyspace's geometry as this connection knows it now: the accept
  // data's, with the bucket_count of the newest index header adopted
  // since (AdoptIndexHeader). Engine and scan read it through this one
  // object; the reference stays valid for the connection's life.
  const index_lookup::Geometry& geometry() const { return geometry_; }
  // Adopts an index header a reader fetched (read-region offset 0,
  // kv/index_format.h) when it is newer than the geometry in use (a
  // higher generation and more buckets; an older one is ignored). Returns
  // ok whether or not it adopted it. Errors: corruption when its index
  // would not fit the read region (a header no server could have
  // written); the geometry is then unchanged.
  Status AdoptIndexHeader(const index_format::IndexHeader& h);
  bool failed() const { return !failure_.ok(); }
  const Status& failure() const { return failure_; }
  // Marks the connection unusable; later operations return `why`.
  void Fail(Status why);
  const std::string& server() const { return server_; }

  // The registered data arena (reads land here, records are staged here).
  uint8_t* arena() { return arena_.get(); }
  size_t arena_size() const { return arena_size_; }

  // The grant being appended to (tail = next free byte in the segment).
  const protocol::Grant& grant() const { return grant_; }
  uint64_t tail() const { return tail_; }
  // Installs a new grant (REFILL_ACK); its write region replaces the old.
  Status InstallGrant(const protocol::Grant& g);

  // Free submission-queue entries; each post takes one.
  uint32_t sq_free() const { return sq_free_; }
  // Posts a read of the read-only region [remote_off, +len) into arena
  // [arena_off, +len); its completion carries `tag`. `more`: another
  // post follows at once, and both leave together (RPMA_EXT_F_MORE).
  Status PostRead(size_t arena_off, uint64_t remote_off, size_t len,
                  uint64_t tag, bool more = false);
  // Posts a write of arena [arena_off, +len) at the grant's tail and
  // advances the tail. Unsignaled (errors still complete). `more` as for
  // PostRead (a put's COMMIT follows its record).
  Status PostAppend(size_t arena_off, size_t len, uint64_t* segment_offset,
                    bool more = false);
  // Sends a message (header + payload); false-free: needs a free send slot
  // (send_slots_free() > 0).
  Status Send(protocol::Type type, uint32_t request_id, const uint8_t* payload,
              size_t len);
  size_t send_slots_free() const { return free_send_.size(); }
  // Messages the server accepts outstanding (its posted receives).
  uint32_t max_inflight() const { return max_inflight_; }

  // A completed operation the Engine must act on.
  struct Event {
    enum Kind { kRead, kMessage } kind;
    uint64_t tag = 0;           // kRead
    protocol::Header header;    // kMessage
    std::vector<uint8_t> body;  // kMessage payload (copied out of the slot)
  };
  // Waits (poll or block, per options) until at least one event or the
  // deadline; appends events. Send completions are absorbed. Returns ok
  // with no event at `wake` (before the deadline: a backoff ends).
  // Errors: timed_out at the deadline (the connection is then failed),
  // unavailable (a completion failed: the connection is failed).
  Status Wait(std::chrono::steady_clock::time_point deadline,
              std::vector<Event>* events,
              std::chrono::steady_clock::time_point wake =
                  std::chrono::steady_clock::time_point::max());

 private:
  explicit Connection(const ClientOptions& o);
  Status Connect();
  // Makes one connection with connect private data `cd` (receives posted
  // first) and decodes its accept into accept_.
  Status Dial(const protocol::Connect& cd);
  // Drops the connection (a HELLO-admitted one, before its ticket's).
  void Hangup();
  Status Admit(const void* pdata, size_t len);
  Status Hello();
  Status Register();
  Status PostRecv(uint32_t slot);
  Status Reap(std::vector<Event>* events, int* got);
  Status StatusOfAdmission(const protocol::Accept& a) const;
  // Whether an index of bucket_count buckets at the accept's index offset
  // lies inside the read region.
  bool IndexFits(uint64_t bucket_count) const;

  ClientOptions options_;
  std::string server_;  // "host:port" for messages
  std::string host_, port_;
  rpma_peer* peer_ = nullptr;
  rpma_conn* conn_ = nullptr;
  rpma_cq* cq_ = nullptr;
  rpma_mr_remote* read_mr_ = nullptr;
  rpma_mr_remote* write_mr_ = nullptr;
  rpma_mr_local* msg_mr_ = nullptr;
  rpma_mr_local* arena_mr_ = nullptr;
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, FreeDeleter> msgs_;  // send slots, then recv slots
  std::unique_ptr<uint8_t, FreeDeleter> arena_;
  size_t arena_size_ = 0;
  uint32_t send_slots_ = 0, recv_slots_ = 0;
  std::vector<uint32_t> free_send_;
  protocol::Accept accept_;
  index_lookup::Geometry geometry_;
  uint64_t index_generation_ = 0;  // of the last header adopted; 0: none
  uint64_t read_region_size_ = 0;  // from the read descriptor
  protocol::Grant grant_;
  uint64_t tail_ = 0;
  uint32_t max_inflight_ = 0;
  uint32_t sq_size_ = 0, sq_free_ = 0;
  uint32_t unsignaled_ = 0;  // writes whose SQ entry a later send frees
  Status failure_;
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_CONNECTION_H_
