// kv::store::Keyspace — one keyspace of an open pool: its hash index and
// its log of segments.
//
// Writers get a segment (GrantSegment), write records into it and Commit
// each one: the commit validates the record, stores its 8-byte index slot
// and persists record and slot together — the commit point (one msync on a
// page-granularity file). An update takes a fresh slot and clears the old
// one afterwards; after a crash, Open resolves leftovers (see Recover).
// Readers (Get, ForEach) take no lock: they read slots and immutable
// records, as remote clients do, and retry when a slot changes under them.
//
// Thread-safety: every method may be called concurrently. Commits of keys
// in different home buckets run in parallel (striped locks).
// Lifetime: obtained from Pool; must be released before the Pool closes.
#ifndef KV_STORE_KEYSPACE_H_
#define KV_STORE_KEYSPACE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kv/index_format.h"
#include "kv/index_lookup.h"
#include "kv/record_format.h"
#include "kv/status.h"
#include "kv/store/commit_point.h"
#include "kv/store/mapping.h"
#include "kv/store/options.h"
#include "kv/store/persister.h"
#include "kv/store/pool_format.h"
#include "kv/store/segment.h"

namespace kv::store {

class CommitLog;
class CommitPipeline;
class Index;
class SegmentTable;

class Keyspace {
 public:
  // Built by Pool from a validated catalog entry; Recover() must run
  // before any other call. `mapping` (the pool's) outlives the keyspace.
  Keyspace(const pool_format::CatalogEntry& entry, Mapping* mapping,
           bool read_only, std::chrono::milliseconds grace_period);
  ~Keyspace();
  Keyspace(const Keyspace&) = delete;
  Keyspace& operator=(const Keyspace&) = delete;

  // Rebuilds volatile state from the index: per-segment live bytes, key
  // count; segments that were open are sealed. Slots that are out of
  // bounds are skipped here and reported by Check().
  //
  // `unclean`: the keyspace was not closed cleanly (crash, kill). A commit
  // persists record and slot in no particular order and clears an updated
  // key's old slot without persisting it, so a crash can leave (a) a slot
  // whose record never became durable and (b) two slots for one key. A
  // writable Recover clears (a) and the lower-sequence slot of (b),
  // durably, appending a line per repair to *notes; this reads every
  // record a slot points to. Read-only, nothing is changed: Get picks the
  // newest valid version and Check() lists what the next writable open
  // will repair as notes.
  void Recover(uint64_t open_epoch, bool unclean,
               std::vector<std::string>* notes);

  // Makes the whole index durable (including the clears an update does
  // not persist at once); Pool calls it before marking the keyspace
  // cleanly closed.
  void PersistIndex();

  // Doubles the index online (docs/format.md, "Index growth"): buckets
  // split in place by one more hash bit, the new buckets taking the log's
  // first segments; the catalog entry update (the growth sink) is the
  // commit point. Commits wait meanwhile; lock-free readers (Get, remote
  // clients) never conclude "absent" from the old geometry (the fence,
  // kv/index_format.h). Commits call it by themselves when the load passes
  // kGrowLoad or a new key finds its neighbourhood full; tests and tools
  // may call it directly. Errors: no_space (the log's first segments are
  // in use or the log is too small: the log is full), busy (a moved slot
  // found no room: nothing changed), permission_denied (read-only), and
  // what the growth sink returns (nothing changed).
  Status GrowIndex();
  // Keys per slot above which a commit grows the index: below where a
  // full neighbourhood (16 slots) becomes likely (~0.28 at a million
  // buckets).
  static constexpr double kGrowLoad = 0.25;
  // Pool: persists a growth's new bucket_count and generation in the
  // keyspace's catalog entry.
  void SetGrowthSink(
      std::function<Status(uint64_t bucket_count, uint64_t generation)> sink) {
    growth_sink_ = std::move(sink);
  }

  const std::string& name() const { return name_; }
  uint32_t id() const { return id_; }
  KeyspaceInfo info() const;

  // Grants a segment for appending; the writable part of the segment is
  // durably zero, so a record a crash leaves half-written never looks like
  // an older valid one. no_space when the log is full. Two free segments
  // are held back: one that only the cleaner takes (so compaction always
  // has room, whoever holds the other) and one that `for_delete` may take,
  // so that a full keyspace can still take deletes (tombstones) and then
  // be compacted.
  Result<SegmentGrant> GrantSegment(bool for_delete = false);
  // The writer will not append to the grant any more.
  Status SealSegment(const SegmentGrant& grant);
  // The writer gives the rest of the segment back (e.g. on disconnect).
  Status ReturnSegment(const SegmentGrant& grant);

  // A fresh sequence number (unique and increasing within the keyspace,
  // also across reopen); Commit assigns one to every record it applies. An open
  // hands out (open_epoch << 40) + 1, 2, ...; before a sequence enters the next
  // epoch's range, that epoch is persisted as the keyspace's open_epoch
  // (through the epoch sink), so the next open starts above every sequence
  // handed out.
  // Errors: what the epoch sink returns when the epoch cannot be persisted
  // (no sequence of that epoch is handed out; the next call tries again).
  Result<uint64_t> NextSequence();
  // Moves the sequences this keyspace hands out past `sequence` (a
  // replica's record, or the last sequence of a shard's previous owner):
  // every later NextSequence is greater, also after a reopen (the epoch
  // of `sequence` is persisted through the epoch sink first). Never moves
  // them back. Errors: invalid_argument (above kMaxSequence), what the
  // epoch sink returns (nothing changed in either case).
  Status AdvanceSequencePast(uint64_t sequence);
  // The highest sequence handed out or advanced past so far (0: none).
  uint64_t LastSequence() const { return next_sequence_.load() - 1; }
  // Pool: persists `epoch` as this keyspace's open_epoch.
  void SetEpochSink(std::function<Status(uint64_t epoch)> sink) {
    epoch_sink_ = std::move(sink);
  }
  // Tests: the next GrantSegment takes `segment` if it is free (grants
  // take the highest free segment otherwise).
  void PreferSegmentForTesting(uint32_t segment);
  // Tests: Get calls `hook` after it loaded the index geometry and before
  // it reads the key's neighbourhood (a growth there is what the readers'
  // fence is for). Set before concurrent use.
  void SetReadHookForTesting(std::function<void()> hook) {
    read_hook_ = std::move(hook);
  }
  // Tests: the next sequence NextSequence() hands out.
  void SetNextSequenceForTesting(uint64_t next) { next_sequence_.store(next); }
  static constexpr int kEpochShift = 40;
  // Sequences above this are refused from replicas (2^22 opens of a
  // keyspace before its own sequences reach it).
  static constexpr uint64_t kMaxSequence = uint64_t{1} << 62;
  // Where the log starts in the mapping (writers copy records there).
  uint8_t* log_base() const { return log_; }
  // The bytes a server registers: the keyspace's region (index header,
  // index and log, contiguous in the pool) and where each lies in it.
  // Remote readers get a read-only registration of the region; a writer a
  // write registration of GrantBytes(grant) only. The index header is at
  // offset 0; index_size is the current geometry's (it grows).
  struct Region {
    uint8_t* base = nullptr;
    uint64_t size = 0;
    uint64_t index_offset = 0;  // from base
    uint64_t index_size = 0;    // PhysicalBuckets * 64, now
    uint64_t log_offset = 0;    // from base
    uint64_t log_size = 0;
  };
  Region region() const;
  // The writable bytes of a grant: [log_offset + start, log_offset + size)
  // of the log. Nothing before the grant's start (records committed by
  // an earlier writer of a returned segment) is included.
  uint8_t* GrantBytes(const SegmentGrant& grant) const {
    return log_ + grant.log_offset + grant.start;
  }
  // "page" or "cache line": what a persist costs on this pool.
  std::string granularity() const;
  Persister* persister() const { return persister_; }
  uint32_t max_value_size() const { return max_value_size_; }

  // Commits the record the request describes. Precondition: the record's
  // bytes are written with sequence 0 (they need not be durable yet: the
  // commit persists them with the slot; a remote writer's bytes arrive by
  // one-sided write). Checks bounds (inside the grant, at/after its
  // tail), the record (CRC, lengths, keyspace id, key hash ==
  // request.key_hash, sequence 0), then, under the key's lock, checks the
  // request's condition, assigns the next sequence and seals the record
  // with it (SealRecord) — so commit order is sequence order and a writer
  // can never pin a key with a sequence of its choosing — then:
  //  - a put stores the slot in an empty slot of the key's buckets and
  //    persists record + buckets as one persist point (the commit point),
  //    then clears the key's previous slot (made durable by a later
  //    persist; Recover resolves a crash in between by sequence). When no
  //    slot is empty it replaces the previous slot in place: record
  //    persist, then slot persist.
  //  - a delete first persists the key's buckets (so no older duplicate
  //    can outlive it), then clears the slot and persists again.
  // The request's op (unless kAny) must match the verified record, and a
  // deletes_only request commits tombstones only; both are checked on the
  // record as verified (SealRecord rewrites its header from that), never
  // on bytes the writer may still change. request.fence, when set, is
  // told the claimed end before the record is read. A put refused for a
  // full neighbourhood has its header zeroed again (it never verifies).
  // Every ok commit is applied (a delete of an absent key changes
  // nothing and says had_previous = false). Errors: invalid_argument
  // (bounds — checked overflow-safe, offset and length being a peer's
  // numbers —, grant, op mismatch, oversized value, a writer-chosen
  // sequence), no_space (deletes_only and a put),
  // corruption (record fails verification), condition_failed (the
  // request's condition does not hold; nothing changed), no_space (the
  // key's buckets are full), permission_denied (read-only), and what the
  // commit point returns (commit_point.h; never for the local persist).
  // Runs through pipeline() with Gather::kNo: its own commit point, on
  // the calling thread (kvserver --group_commit=false); the persist points
  // above are the local commit point's.
  Result<CommitResult> Commit(const CommitRequest& request);
  // The keyspace's commit pipeline: batches of commits from any number of
  // writers, one commit point for what arrives together.
  CommitPipeline& pipeline() { return *pipeline_; }

  // Copies the value of `key` into *value: the valid version with the
  // highest sequence among the slots holding the key (more than one only
  // while an update is in flight, or read-only after a crash). not_found
  // also when that version has expired by NowMs() (an older version is
  // never taken instead), or corruption when the record a slot points to
  // fails verification. version->expiry_ms: the absolute expiry, 0 none.
  Status Get(std::string_view key, std::string* value,
             Version* version = nullptr) const;

  // The keyspace's clock (kv/server_clock.h: Unix ms), which stamps
  // expiries at commit and judges them. Tests may replace it; set it
  // before concurrent use.
  uint64_t NowMs() const;
  void SetClockForTesting(std::function<uint64_t()> now_ms) {
    clock_ = std::move(now_ms);
  }

  // The expiry sweep: clears the slot of every key whose version has
  // expired by NowMs(), making expired records dead space that Clean()
  // then reclaims. Cheap when nothing can have expired since the last
  // sweep (it remembers the earliest expiry it left, and commits lower
  // it); otherwise one walk over the index and the headers of the records
  // with an expiry. Crash consistency (docs/format.md, "Expiring keys"):
  // the clears an update deferred are made durable first, so a cleared
  // expired slot can never uncover an older version of its key after a
  // crash; the sweep's own clears are deferred the same way (durable
  // before any segment is reused, and at the end of the sweep). A slot a
  // crash leaves uncleared is still expired. Returns the keys reclaimed.
  // Errors: permission_denied (read-only).
  Result<uint64_t> ReclaimExpired();

  // Calls fn for every live, unexpired key (unordered) until it returns
  // false. Concurrent commits may or may not be seen (a key updated
  // meanwhile may be seen twice, old and new). corruption if a record
  // fails verification.
  Status ForEach(
      const std::function<bool(const record_format::RecordView&)>& fn) const;

  // Calls fn with the key's current committed record (sealed, as in the
  // log: the bytes a replica commits) while holding the key's stripe, so
  // that no commit of the key reaches its commit point, and no cleaner
  // moves its record, until fn returns: what fn does with it is ordered
  // before every later commit of the key (a shard move's copier queues
  // it on the link those commits are forwarded on). fn must not commit
  // to this keyspace. not_found (fn not called) when the key has no
  // live version (absent, deleted or expired by NowMs()).
  // Errors: invalid_argument (key size).
  Status WithCurrentRecord(std::string_view key,
                           const std::function<void(const uint8_t* record,
                                                    size_t length)>& fn) const;

  KeyspaceStats Stats() const;

  // ok, or unavailable on a read-only open of an unclean keyspace whose
  // commit log holds commits its index does not (a writable open replays
  // them): then the index alone is stale, and Get, ForEach and every
  // offline walk of the slots (kvadmin snapshot, dump, verify) refuse.
  Status ReadableOrWhy() const;

  // Compacts: first runs the expiry sweep (ReclaimExpired: records
  // expired by then are not copied, their slots are cleared), then copies
  // the live records of sealed segments whose live ratio is at most
  // max_live_ratio into a fresh segment, switching each slot atomically
  // (persisted), then frees the victims after the grace period.
  // Returns the number of segments cleaned. no_space if no segment is free
  // to copy into.
  Result<uint32_t> Clean(double max_live_ratio = 0.5, size_t max_segments = 8);

  // Verifies every slot (bounds, fingerprint, home bucket, duplicates) and
  // every record a slot points to (CRC, key hash, keyspace); appends what
  // is wrong to report->problems — or, on a read-only keyspace that was not
  // closed cleanly, the torn commits and duplicates the next writable open
  // repairs to report->notes.
  void Check(CheckReport* report) const;

  // A non-empty index slot as ForEachSlot reports it (keyspace_slots.cc).
  struct SlotEntry {
    uint64_t slot = 0;                 // bucket * 8 + position in the bucket
    uint64_t value = 0;                // the slot's 8 bytes
    uint64_t log_offset = 0;           // of the record it points to
    uint32_t length = 0;               // bytes
    record_format::RecordView record;  // into the log; when problem empty
    std::string problem;  // empty: a committed version; else why it is not
  };
  // Calls fn for every non-empty slot in index order until it returns
  // false, verifying each one's record as recovery does (kvadmin snapshot,
  // verify). Never modifies the pool; meant for a pool nobody writes.
  void ForEachSlot(const std::function<bool(const SlotEntry&)>& fn) const;

 private:
  friend class CommitPipeline;
  struct Found {
    uint64_t* slot = nullptr;
    uint64_t value = 0;
    record_format::RecordView view;
  };
  // Stage 1 (prepare): a commit request that passed every check not
  // needing the key's lock.
  struct Prepared {
    record_format::RecordView view;
    uint64_t log_off = 0;
    uint64_t new_slot = 0;
  };
  // Stage 2 (decide): what a request became under its key's stripe.
  struct Decided {
    enum class Path {
      kDone,      // final now: refused, or a delete of an absent key
      kReserved,  // a put holding an empty slot: stages 3-4 to come
      kOrdered,   // a delete or in-place replacement: CompleteOrdered
    };
    Path path = Path::kDone;
    Status status;  // kDone: the outcome
    CommitResult result;
    uint8_t* record = nullptr;
    uint32_t length = 0;
    uint32_t segment = 0;
    uint64_t* buckets = nullptr;  // the home bucket and the next
    uint64_t* slot = nullptr;     // kReserved: the slot taken
    uint64_t slot_value = 0;
    bool stored = false;           // kReserved: slot_value is in *slot
    uint64_t* old_slot = nullptr;  // the key's previous slot, or nullptr
    // kReserved, kOrdered: the commit log entry its commit point persists
    // (none when the keyspace writes none, or a checkpoint covered it).
    Persister::Range entry = {nullptr, 0};
    bool index_full = false;  // kDone, no_space: the neighbourhood is full
    uint64_t index_generation = 0;  // index_full: the geometry decided in
  };

  // The key's stripe (commit_pipeline.cc takes it).
  std::mutex& StripeFor(uint64_t hash) const;
  // The index's resize lock, held shared by a pipeline batch (decide to
  // publish) and by index walks.
  const Index& index() const { return *index_; }
  // Slot bounds: a record inside the log, not crossing a segment.
  bool SlotInBounds(uint64_t slot) const {
    return index_format::SlotInBounds(slot, log_size_, segment_size_);
  }
  index_lookup::Geometry geometry(uint64_t bucket_count) const {
    return {id_, bucket_count, log_size_, segment_size_};
  }
  // Whether the load calls for a growth.
  bool NeedsGrowth() const;
  // Grows unless the index's generation has moved past `generation`
  // already (another caller grew it): ok then.
  Status GrowIndexFrom(uint64_t generation);
  // One growth attempt to `bucket_count` buckets; caller holds the index
  // exclusively (keyspace_grow.cc). busy: a moved slot found no room.
  Status GrowTo(uint64_t bucket_count, uint64_t generation);
  // After a commit: grows when NeedsGrowth(); after a growth that failed
  // (the log full), tries again only a second later.
  void MaybeGrow();
  // Finds the slot holding `key` in its neighbourhood (caller holds the
  // stripe, or accepts races). Returns false when absent.
  bool FindSlot(std::string_view key, uint64_t hash, Found* out) const;
  Status PersistSlot(uint64_t* slot, uint64_t value);
  // Persists `epoch` as the open epoch through the sink when above it.
  Status EnsureDurableEpoch(uint64_t epoch);
  // Stage 1: bounds, claim, record (keyspace_commit.cc).
  Result<Prepared> PrepareCommit(const CommitRequest& r);
  // Stage 2, caller holds the key's stripe and the index shared:
  // condition, sequence, slot (stored when `store_slot`, else reserved).
  // Persists nothing. A new key whose neighbourhood is full is refused
  // with no_space and d->index_full (the pipeline grows the index and
  // decides it again).
  void Decide(const CommitRequest& r, const Prepared& p, bool store_slot,
              Decided* d);
  // Stage 3 for kReserved puts: one MakeDurable of their records (and
  // buckets when they were stored). On error, undoes them (slots
  // emptied, records unsealed) and sets their status.
  Status ReachCommitPoint(Decided* const* d, size_t n, CommitPoint* point);
  // Stage 4 for kReserved puts after their commit point: slots stored
  // (and persisted) where not yet, old slots cleared, accounting.
  void Publish(Decided* const* d, size_t n);
  // A kOrdered decision, after every earlier decision reached its commit
  // point; caller still holds the stripe. Sets d->status.
  void CompleteOrdered(Decided* d, CommitPoint* point);
  // Grants from the segment table and zeroes the writable part, after
  // persisting the index's lazily durable clears.
  Result<SegmentGrant> GrantZeroed(GrantPurpose purpose);
  // Why the slot at index i cannot be a committed version ("" if it can):
  // the one rule recovery, Check, the slot walk and growth apply.
  std::string SlotProblem(uint64_t i, uint64_t v,
                          record_format::RecordView* view) const;
  // Segments at the log's start that an index of `bucket_count` buckets
  // covers (keyspace_grow.cc).
  uint32_t SegmentsUnderIndex(uint64_t bucket_count) const;
  // Unclean recovery: clears torn and duplicate slots (durably).
  void RepairAfterCrash(std::vector<std::string>* notes);
  // What the commit log holds past its checkpoint that the index does
  // not: per key the newest entry whose record verifies, when newer than
  // the key's version in the index (keyspace_recover.cc).
  struct ReplayItem {
    uint64_t slot_value = 0;           // the entry's (a tombstone's record)
    record_format::RecordView record;  // verified; tombstone: a delete
    bool found = false;                // the key has an older slot
    Found old;
  };
  struct Replay {
    std::vector<ReplayItem> items;
    uint64_t next_lsn = 0;  // above every entry read
    uint64_t ignored = 0;   // entries whose record does not verify
  };
  Replay PlanReplay() const;
  // Unclean writable recovery, after RepairAfterCrash: applies PlanReplay
  // (clears, then puts) and moves the checkpoint past it, durably.
  void ReplayCommitLog(std::vector<std::string>* notes);
  // Appends the entry of a commit whose slot change is stored (d->entry).
  Persister::Range AppendEntry(uint64_t slot, uint64_t sequence,
                               bool tombstone);
  // The whole index durable, then the commit log's start past it.
  void Checkpoint();
  // A checkpoint when half the commit log is past its start.
  void MaybeCheckpoint();

  // Calls fn(i, j, older) for each pair of slots holding the same key;
  // `older` is i or j (the lower sequence).
  void ForEachDuplicate(const std::function<void(uint64_t i, uint64_t j,
                                                 uint64_t older)>& fn) const;
  Status MoveRecord(uint64_t* slot, uint64_t old_value, SegmentGrant* grant,
                    bool* have_grant);
  // Folds a committed record's expiry (0: none) into next_expiry_.
  void NoteExpiry(uint64_t expiry_ms);
  // Clears the slot of an expired version (the caller holds its key's
  // stripe and checked that the slot still holds `value`, and the clears
  // deferred before were made durable); accounting follows.
  void ClearExpired(uint64_t* slot, uint64_t value);
  // ReclaimExpired's body; the caller holds clean_mu_.
  uint64_t SweepExpired();
  // Moves the live records out of `victims` (marked kCleaning); caller
  // holds clean_mu_. Returns how many were cleaned.
  Result<uint32_t> CleanVictims(const std::vector<uint32_t>& victims);
  // Index growth: moves the records out of the sealed segments among the
  // log's first `end`, so that the grown index can take them.
  Status EvacuateFront(uint32_t end);

  const std::string name_;
  const uint32_t id_;
  uint8_t* const log_;
  const uint64_t log_size_;
  const uint32_t segment_size_;
  const uint32_t max_value_size_;
  const pool_format::CatalogEntry entry_;
  Mapping* const mapping_;
  Persister* const persister_;
  const bool read_only_;
  bool unclean_ = false;  // not closed cleanly (repaired unless read-only)
  std::unique_ptr<SegmentTable> segments_;
  std::unique_ptr<Index> index_;
  // Format 4: the commit log (nullptr: the keyspace has none), and
  // whether commits write entries (a writable open of a page or memory
  // mapping; on a cache-line mapping the index persists are as cheap).
  std::unique_ptr<CommitLog> commit_log_;
  bool entries_on_ = false;
  uint64_t replay_pending_ = 0;  // read-only unclean: commits not replayed
  // One growth at a time (taken before the index's resize lock).
  std::mutex grow_mu_;
  std::function<Status(uint64_t, uint64_t)> growth_sink_;
  std::atomic<uint64_t> growths_{0};
  std::atomic<int64_t> next_auto_growth_ns_{0};  // steady clock
  std::function<void()> read_hook_;
  std::unique_ptr<CommitPipeline> pipeline_;
  std::mutex clean_mu_;
  std::atomic<uint64_t> next_sequence_{1};
  std::atomic<uint64_t> durable_epoch_{0};  // highest epoch persisted
  std::mutex epoch_mu_;
  std::function<Status(uint64_t)> epoch_sink_;
  std::atomic<int64_t> keys_{0};
  std::function<uint64_t()> clock_;  // tests; UnixMillisNow otherwise
  // The earliest expiry among the committed versions the last sweep left
  // and those committed since: no key can have expired before it, so a
  // sweep before it is skipped. 0 (at open): unknown, sweep.
  std::atomic<uint64_t> next_expiry_{0};
  std::mutex sweep_mu_;  // one sweep at a time
};

}  // namespace kv::store

#endif  // KV_STORE_KEYSPACE_H_
