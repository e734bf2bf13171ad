// kv::Client — a connection to one keyspace of a kvserver.
//
// Puts and deletes are durable when they return ok: the record is written
// one-sided into this connection's granted log segment and committed by
// the server, which persists record and index slot together. Gets are
// one-sided reads of the keyspace's index and log; the server's CPU is
// not involved. See docs/protocol.md.
//
//   auto c = kv::Client::Connect({.server = "127.0.0.1:7400",
//                                 .keyspace = "default"});
//   if (!c.ok()) { std::cerr << c.status().ToString(); return 3; }
//   kv::Status st = (*c)->Put("k", "v");
//   std::string v;
//   st = (*c)->Get("k", &v);  // not_found is not an error
//
// Thread-safety: every method may be called from any thread; calls on one
// Client are serialized by an internal mutex (one connection, one queue).
// For parallelism open one Client per thread; a Batch keeps many
// operations in flight on one connection.
// Lifetime: the Client owns its connection; destroying it returns the
// grant's unused tail to the server and disconnects.
// Failure: a single-server Client whose connection failed — unavailable
// (the server went away or dropped it) or timed_out (no reply within
// op_timeout) — stays failed: it does not reconnect, and every later call
// returns that first error at once, even when the server answers again.
// Connect a new Client then. (A cluster Client does this for you: it
// drops a shard's failed connection and connects again on the next call.)
//
// A cluster (ClientOptions::cluster): the same calls, each key routed to
// its shard's node over a connection of its own, made on first use; a
// Batch spans shards (each shard's part in flight at once); Scan walks
// the shards in turn; Info answers for every shard connected so far.
// Requests a node refuses with wrong_shard (the map moved) are retried
// after re-reading the map, until op_timeout.
#ifndef KV_CLIENT_CLIENT_H_
#define KV_CLIENT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"

namespace kv {

struct ClientOptions {
  std::string server = "127.0.0.1:7400";  // HOST:PORT
  std::string keyspace = "default";       // 1..63 bytes of [A-Za-z0-9_.-]
  // A cluster instead of one server (docs/cluster.md, "The client"):
  // "etcd://HOST:PORT[,HOST:PORT...]", the etcd endpoints that hold the
  // cluster's map. Then `server` is ignored, `keyspace` names a cluster
  // keyspace (at most 57 bytes), and every key goes to its shard's node.
  std::string cluster;
  std::string cluster_name = "rpkv";  // the cluster's keys: /rpkv/NAME/
  // The map epoch sent with the connect and every request (set by the
  // cluster client for each shard's connection; 0 outside a cluster).
  uint32_t map_epoch = 0;
  bool create_if_missing = false;  // needs kvserver --allow_create
  std::string access_key;          // for keyspaces listed in --access_keys
  // RDMA provider: "auto" (an RDMA device that reaches the server, else
  // the tcp software provider), "tcp" or "verbs". Not "auto" sets
  // RPMA_PROVIDER for the whole process (the RPMA layer reads it there).
  std::string provider = "auto";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds op_timeout{10000};  // per operation or batch
  // How the caller's thread waits for completions: kPoll spins on the
  // completion queue (lowest latency, one busy core while waiting), kBlock
  // sleeps on its file descriptor (no CPU while waiting, a wake-up per
  // reply), kAdaptive spins for spin_us and then blocks (the default: the
  // latency of polling for fast replies, no burnt core for slow ones).
  enum class Wait { kPoll, kBlock, kAdaptive };
  Wait wait = Wait::kAdaptive;
  uint32_t spin_us = 50;
  // Operations a Batch keeps in flight (capped by what the server grants).
  uint32_t max_inflight = 32;
  // Slot locations remembered for one-round-trip gets (0: no cache).
  size_t slot_cache_entries = 65536;
  // IncrBy/Append: conditional writes that lost to another writer, in a
  // row, before the call gives up with busy (at least 1).
  uint32_t max_conflicts = 100;
};

// What a successful write or read tells about the key's version: the
// sequence the server assigned at commit. Versions of a key increase.
struct KeyVersion {
  uint64_t sequence = 0;
  // Filled by reads (Get, Batch gets). expires_at_ms: the version's
  // absolute expiry on the server's clock (Unix ms), 0 when it has none.
  // ttl_ms: the time left by this client's estimate of the server's clock
  // (at least 1), -1 when it has none. See Ttl() for the clock bound.
  uint64_t expires_at_ms = 0;
  int64_t ttl_ms = -1;
};

// A conditional write (checked by the server at commit, under the key's
// lock). A failed condition is Status condition_failed, nothing changed.
struct WriteOptions {
  bool if_absent = false;   // put only if the key does not exist
  uint64_t if_version = 0;  // non-zero: only if the key is at this version
  KeyVersion* version = nullptr;  // out: the version written (optional)
  // Put only: the key expires this long after the server commits the put
  // (Redis SET ... PX). The record carries the duration; the server stamps
  // the absolute expiry with its own clock at commit, so this client's
  // clock plays no part. Unset: no expiry (a put replaces any expiry the
  // key had, as SET does). Must be 1 ms .. 100 years: invalid_argument
  // otherwise (also zero or negative), and for a delete.
  std::optional<std::chrono::milliseconds> ttl;
};

// Many operations on one connection, in flight together (up to
// ClientOptions::max_inflight). Add operations, then Client::Execute();
// each operation's result is in result(i). Keys and values are copied
// when added; a Batch may be reused after Clear().
class Batch {
 public:
  enum class Op : uint8_t { kPut, kGet, kDelete };
  struct Result {
    Status status;
    std::string value;  // kGet
    KeyVersion version;
    bool had_previous = false;  // kPut/kDelete: the key existed
  };

  void Put(std::string_view key, std::string_view value,
           const WriteOptions& options = {});
  void Get(std::string_view key);
  void Delete(std::string_view key, const WriteOptions& options = {});
  void Clear();

  size_t size() const { return ops_.size(); }
  const Result& result(size_t i) const { return ops_[i].result; }

 private:
  friend class Client;
  friend class Router;
  struct Entry {
    Op op;
    std::string key;
    std::string value;
    bool if_absent = false;
    uint64_t if_version = 0;
    Result result;
    std::optional<std::chrono::milliseconds> ttl;
  };
  std::vector<Entry> ops_;
};

// What this client has done (not the server's view; gets are one-sided,
// so only clients can count them).
struct ClientStats {
  uint64_t gets_one_round_trip = 0;  // warm: the cached slot was right
  uint64_t gets_cold = 0;            // neighbourhood, then records
  uint64_t get_retries = 0;          // restarts (record moved, slot changed)
  // Index growths this client learnt of from the index header (the
  // readers' fence, docs/protocol.md "Get"); each restarted a get or
  // extended a scan to the grown index.
  uint64_t index_refreshes = 0;
  uint64_t puts = 0, deletes = 0;  // acknowledged by the server
  uint64_t refills = 0;            // grants replaced
};

class Connection;
class ClientState;
class Router;

class Client {
 public:
  // Connects and is admitted to the keyspace. Errors (messages say what to
  // do): invalid_argument (options: address, keyspace name, access key
  // over 64 bytes, provider not auto|tcp|verbs), unavailable ("cannot connect
  // to 127.0.0.1:7400: connection refused — is kvserver running?", server
  // shutting down, too many connections), not_found (unknown keyspace — with
  // the
  // --create/kvadmin hint), permission_denied (access key missing or
  // wrong), no_space (no log segment to grant), timed_out.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Durable put. Errors: invalid_argument (key not 1..1024 bytes, value
  // over the keyspace's max_value_size — the message gives the limit),
  // condition_failed (options), no_space (keyspace log or the key's index
  // buckets full; deletes still work), unavailable (connection lost: the
  // put may or may not have been applied), timed_out, corruption.
  Status Put(std::string_view key, std::string_view value,
             const WriteOptions& options = {});
  // Copies the value into *value. not_found when absent — also when the
  // key's version has expired (by this client's estimate of the server's
  // clock: see Ttl()); corruption when the record fails verification
  // after bounded retries; unavailable.
  Status Get(std::string_view key, std::string* value,
             KeyVersion* version = nullptr);
  // Durable delete. ok also when the key did not exist (had_previous, if
  // given, tells). Errors as Put.
  Status Delete(std::string_view key, const WriteOptions& options = {},
                bool* had_previous = nullptr);
  // ok(true/false) or an error as Get.
  Result<bool> Exists(std::string_view key);

  // Atomic read-modify-write, built on conditional writes: read the value
  // and its version, write the new value only if the key is still at that
  // version (or, when it was absent, still absent), and on a conflict —
  // another writer got there first — read again and retry, after a short
  // random pause that grows with each conflict (at most 1 ms). After
  // options().max_conflicts conflicts in a row the call fails with busy
  // ("… conflicting writes in a row …"), nothing changed by it. Durable on
  // ok, like Put.
  //
  // Both keep the key's expiry, rewritten as the time left by this
  // client's estimate of the server's clock (so it may move earlier by up
  // to twice that estimate's error; see Ttl()).
  //
  // IncrBy: the value is a signed 64-bit decimal integer ("-12"; an
  // absent key counts as 0); returns the new value. invalid_argument when
  // the value is not such an integer or the sum overflows (nothing is
  // written). Incr is IncrBy(key, 1).
  Result<int64_t> IncrBy(std::string_view key, int64_t delta);
  Result<int64_t> Incr(std::string_view key) { return IncrBy(key, 1); }
  // Appends `suffix` to the value (an absent key counts as ""); returns
  // the new length. invalid_argument when the result would exceed the
  // keyspace's max_value_size.
  Result<uint64_t> Append(std::string_view key, std::string_view suffix);

  // Expiring keys (docs/protocol.md, "Server clock"). Expiries are
  // absolute times on the server's clock. One-sided reads (Get, Exists,
  // Scan, Ttl) judge them by this client's estimate of that clock, learnt
  // from an INFO ping the first time a read meets an expiry and again
  // when the estimate is 10 s old; its error is half the ping's round
  // trip + 1 ms + 500 ppm of its age. The estimate runs on a monotonic
  // clock: changing this host's wall clock changes nothing. A read treats
  // a key as expired once the server's clock may have reached its expiry
  // (estimate + error): it never returns a value past its expiry, and may
  // report a key absent up to twice the error early.
  //
  // Ttl: the milliseconds left before the key expires (>= 1), or
  // kTtlNoExpiry (-1: the key exists without one), or kTtlAbsent (-2).
  // Errors as Get.
  static constexpr int64_t kTtlNoExpiry = -1;
  static constexpr int64_t kTtlAbsent = -2;
  Result<int64_t> Ttl(std::string_view key);
  // Expire: sets the key's time to live (1 ms .. 100 years, else
  // invalid_argument) by rewriting its value with it, conditional on the
  // version read (a read-modify-write as IncrBy: conflicts retried, busy
  // after max_conflicts). Returns true, or false when the key is absent
  // (nothing written). Persist: removes the key's expiry the same way;
  // returns true, or false when the key is absent or has no expiry
  // (nothing written). Durable on ok. Errors as Put.
  Result<bool> Expire(std::string_view key, std::chrono::milliseconds ttl);
  Result<bool> Persist(std::string_view key);

  // Runs every operation of the batch, many in flight; returns ok when the
  // batch ran (each operation's own status is in batch->result(i)), or the
  // connection error that stopped it (operations not run say so).
  Status Execute(Batch* batch);

  // Expired keys are skipped by Scan and ScanPage (judged as Get does).
  //
  // Calls fn for every live key with a prefix, up to `limit` keys (0: no
  // limit; fn returning false stops too), by one-sided reads of the whole
  // index and the records it names. Order: the index's (hash order, not
  // sorted). A consistent snapshot is not promised: keys written meanwhile
  // may or may not appear; each key is given at most once — also when the
  // index grows meanwhile (the scan goes on to the grown end; see
  // ScanPage).
  Status Scan(std::string_view prefix, size_t limit,
              const std::function<bool(std::string_view key,
                                       std::string_view value)>& fn);

  // One page of a cursor scan, as Redis SCAN: examines the index from
  // `cursor` (0: the start) in hash order and calls fn for the live keys
  // with the prefix, until about `count` keys were given (0: 100). Count
  // is a hint: a page ends after a batch of record reads, so it may hold
  // up to 31 more. Returns the cursor of the next page, 0 when the whole
  // index has been examined. The cursor is a slot number of the index,
  // kept by the caller (no server state). A key present from the first
  // page to the last is given at least once, unless an update of it (or
  // the cleaner) moved its slot meanwhile from the bucket after a page
  // boundary to the one before (a key lives in one of two neighbouring
  // buckets); a key being updated may be given twice (dedupe if it
  // matters, as with SCAN). Keys written meanwhile may or may not appear.
  // The index may grow meanwhile (it doubles in place and moves slots
  // only forward; a page that reaches the end of the index this client
  // knows reads the index header and goes on to a grown end): no key
  // present throughout is missed, but one a growth moved from behind the
  // cursor to ahead of it is given twice. The cursor stays a slot number
  // across growths.
  // Errors: invalid_argument (a cursor that is not of this keyspace's
  // index), and those of Get.
  Result<uint64_t> ScanPage(
      uint64_t cursor, std::string_view prefix, size_t count,
      const std::function<void(std::string_view key, std::string_view value)>&
          fn);

  // Server-side information as "name value" lines: kStats (connections,
  // puts, deletes, commits, refills, refusals, cleaner runs, per-keyspace
  // bytes live/dead), kKeyspaces (one name per line), kServer (provider,
  // pool granularity, this keyspace's geometry).
  enum class InfoTopic { kStats = 0, kKeyspaces = 1, kServer = 2 };
  // An INFO of topic kPing (empty reply) timed.
  Result<std::string> Info(InfoTopic topic);
  // Round-trip time of one small message exchange with the server.
  Result<std::chrono::nanoseconds> Ping();

  ClientStats stats() const;
  const ClientOptions& options() const { return options_; }
  uint32_t max_value_size() const;

 private:
  Client(ClientOptions options, std::unique_ptr<Connection> conn);
  Client(ClientOptions options, std::unique_ptr<Router> router);
  ClientOptions options_;
  std::unique_ptr<ClientState> state_;  // one server
  std::unique_ptr<Router> router_;      // a cluster (options_.cluster)
};

}  // namespace kv

#endif  // KV_CLIENT_CLIENT_H_
