// kv::Engine — runs key operations over one Connection, many in flight:
// the put path (record staged in the arena, one-sided write at the grant
// tail + COMMIT, refill when the grant is full) and the get path
// (neighbourhood read, record reads, the shared reader algorithm of
// kv/index_lookup.h, slot cache, bounded retries). See docs/protocol.md.
//
// Thread-safety: none; the Client serializes calls.
// Ownership: an Op's key and value views must stay valid until Run
// returns; results are written into the Op.
#ifndef KV_CLIENT_SRC_ENGINE_H_
#define KV_CLIENT_SRC_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "connection.h"
#include "kv/client/client.h"
#include "kv/index_lookup.h"

namespace kv {

struct Op {
  enum class Kind : uint8_t { kPut, kGet, kDelete, kInfo };
  Kind kind = Kind::kGet;
  std::string_view key;
  std::string_view value;
  bool if_absent = false;
  uint64_t if_version = 0;
  // Put: a time to live (ttl_ms, checked: 1 ms .. 100 years).
  bool has_ttl = false;
  int64_t ttl_ms = 0;
  uint8_t info_topic = 0;
  // Results.
  Status status;
  std::string out;  // get: the value; info: the text
  uint64_t sequence = 0;
  // Get: the version's absolute expiry (server clock, Unix ms), 0 none.
  // The engine does not judge it: the Client does, with its estimate of
  // the server's clock (server_clock.h).
  uint64_t expiry = 0;
  bool had_previous = false;
  bool done = false;

  // Engine state.
  enum class State : uint8_t {
    kReady,
    kNeighbourhood,
    kRecords,
    kConfirm,
    kAwaitAck
  };
  State state = State::kReady;
  uint64_t hash = 0;
  int attempts = 0;
  int reads = 0;  // outstanding
  bool warm = false;
  uint64_t cached_slot = 0;
  // The bucket count the neighbourhood reads used: "not found" needs the
  // index header to show this one (the fence, kv/index_format.h).
  uint64_t bucket_count = 0;
  size_t neigh_off = 0, header_off = 0, warm_off = 0;
  uint64_t neigh[index_lookup::kNeighbourhoodSlots] = {};
  size_t record_off[index_lookup::kNeighbourhoodSlots] = {};
};

// Test hooks (fault injection; tests only, see client/tests/
// get_path_test.cc). Set or clear them only while no Client runs an
// operation; unset, each costs one check per completion.
struct EngineHooksForTesting {
  // Called on the client's thread each time all of a get's reads have
  // completed, before the engine judges them, with the op and the arena
  // the bytes landed in. op.state says which reads: kNeighbourhood (at
  // neigh_off, plus the cached record at warm_off when op.warm), kRecords
  // (each candidate's record at record_off[pos], the slots in op.neigh),
  // kConfirm (the neighbourhood again, at neigh_off, then the index
  // header, at header_off). It may change those
  // bytes to script what the reader sees (a torn neighbourhood, a bad
  // first record).
  std::function<void(const Op& op, uint8_t* arena)> reads_done;
  // Called with each message the server sent, before the engine acts on
  // it; may change it (a wrong request id, a short acknowledgement).
  std::function<void(Connection::Event* message)> message;
};
extern EngineHooksForTesting engine_hooks_for_testing;

class Engine {
 public:
  Engine(Connection* conn, const ClientOptions& options);

  // Runs every op to completion (each op's status says how it ended).
  // Returns the connection error that stopped the run, if any; ops that
  // did not finish carry it too.
  Status Run(const std::vector<Op*>& ops);
  // The checks of an op's own arguments (key length, value size,
  // contradictory conditions): invalid_argument before anything is sent,
  // whatever the connection's state.
  Status CheckArguments(const Op& op) const;

  void ForgetSlot(std::string_view key) { cache_.erase(std::string(key)); }
  const ClientStats& stats() const { return stats_; }
  // Growths a scan learnt of (it reads the index header itself).
  void NoteIndexRefreshes(uint64_t n) { stats_.index_refreshes += n; }

 private:
  enum class Start { kStarted, kFinished, kWait };
  Start StartOp(Op* op);
  Start StartGet(Op* op);
  Start StartWrite(Op* op);
  Start StartInfo(Op* op);
  Start RequestRefill(bool for_delete);
  void OnReadsDone(Op* op);
  void OnMessage(const Connection::Event& e);
  void GetFromNeighbourhood(Op* op);
  void GetFromRecords(Op* op);
  // Counts a retry and starts the get over (corruption after
  // kMaxAttempts attempts).
  void RetryGet(Op* op, const char* why);
  // Starts the get over from the neighbourhood, with the current geometry.
  void RestartGet(Op* op);
  // Reads the neighbourhood again to tell "absent" from a torn copy, and
  // then the index header (the readers' fence): absent only if the index
  // has not grown since the op's reads.
  void ConfirmAbsent(Op* op);
  // Judges the confirming reads: not found, or the get starts over.
  void OnConfirmed(Op* op);
  void Finish(Op* op, Status st);
  // Arena bytes for an op; false when the arena is exhausted for now.
  bool Allocate(size_t len, size_t* off);
  bool CanSendRequest() const;
  uint32_t NextRequestId() {
    return ++request_id_ == 0 ? ++request_id_ : request_id_;
  }
  void CacheSlot(std::string_view key, uint64_t slot);

  Connection* const conn_;
  const ClientOptions options_;
  // The connection's geometry (Connection::geometry()): its bucket_count
  // follows the index's growths as index headers show them.
  const index_lookup::Geometry& geo_;
  std::deque<Op*> ready_;
  std::unordered_map<uint32_t, Op*> awaiting_;  // request id -> op
  uint32_t request_id_ = 0;
  uint32_t requests_out_ = 0;
  uint32_t refill_id_ = 0;  // non-zero while a REFILL is outstanding
  Status refill_error_;     // the last refill's failure (cleared by success)
  // A REFILL answered busy (the server's rate limit or keyspace share) is
  // sent again at refill_retry_at_, with backoff, until op_timeout has
  // passed since the first busy (refill_busy_since_); then busy is the
  // op's error.
  // When the last Run ended: after a pause Run first looks for messages
  // the server sent meanwhile (an idle-timeout ERROR).
  std::chrono::steady_clock::time_point last_run_{};
  std::chrono::steady_clock::time_point refill_retry_at_{};
  std::chrono::steady_clock::time_point refill_busy_since_{};
  std::chrono::milliseconds refill_backoff_{0};
  // Handles a busy REFILL_ACK: schedules the retry or gives up.
  void OnRefillBusy(const std::string& message);
  size_t arena_used_ = 0;
  int holding_ = 0;      // ops in flight that hold arena bytes
  size_t finished_ = 0;  // ops of the current Run that are done
  std::unordered_map<std::string, uint64_t> cache_;
  ClientStats stats_;
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_ENGINE_H_
