// kv::store::PoolRestore — rebuilds a pool's catalog and keyspace indexes
// from a metadata snapshot (kvadmin restore), re-linking only records that
// still verify in the log.
//
// Works below Pool: it needs one valid superblock but not a valid catalog
// or index (those are what it repairs). Usage: Open, PlanCatalog with the
// snapshot's keyspaces, Relink every snapshot entry, Commit. Nothing in the
// pool changes before Commit; Commit is all-or-nothing across a crash
// (RestoreJournal): the pool afterwards reads either as before or as
// restored. Logs are never written: a restore only writes catalog entries
// and index slots, so it can be repeated.
//
// Thread-safety: none (one thread); holds the pool's exclusive lock.
#ifndef KV_STORE_POOL_RESTORE_H_
#define KV_STORE_POOL_RESTORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"
#include "kv/store/mapping.h"
#include "kv/store/restore_journal.h"

namespace kv::store {

// A keyspace's catalog entry as a snapshot recorded it.
struct RestoreKeyspace {
  std::string name;
  uint32_t id = 0;
  uint64_t region_offset = 0;
  uint64_t region_size = 0;
  uint64_t bucket_count = 0;
  uint64_t log_offset = 0;  // absolute, in the pool
  uint64_t log_size = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
};

// One index entry as a snapshot recorded it.
struct RestoreEntry {
  std::string_view key;
  uint64_t slot = 0;        // bucket * 8 + position
  uint64_t log_offset = 0;  // relative to the keyspace's log
  uint32_t length = 0;      // record bytes (a multiple of 64)
  uint64_t sequence = 0;
  uint32_t crc = 0;  // the record header's CRC32C
  bool tombstone = false;
};

struct RestoreReport {
  uint32_t keyspaces = 0;         // restored
  uint32_t catalog_written = 0;   // catalog entries rewritten
  uint64_t relinked = 0;          // entries whose record verified
  uint64_t slots_changed = 0;     // index slots whose value changed
  std::vector<std::string> kept;  // live keyspaces not in the snapshot
  // Restored keyspaces that got no commit log (no room after their log in
  // their region: the snapshot's keyspace had none); they commit as
  // format 3 did (docs/format.md).
  std::vector<std::string> without_commit_log;
};

class PoolRestore {
 public:
  // Opens the pool file for writing (exclusive lock; busy names the
  // holder), first rolling back an interrupted restore. Errors: those of
  // PmemFileMapping::Open and RollBackRestore; corruption when neither
  // superblock copy is valid.
  static Result<std::unique_ptr<PoolRestore>> Open(const std::string& path);
  // The same over any writable Mapping and journal (tests).
  static Result<std::unique_ptr<PoolRestore>> OpenOn(
      std::unique_ptr<Mapping> m, std::unique_ptr<RestoreJournal> journal);
  ~PoolRestore();

  std::string uuid() const;  // the pool's, as text
  uint64_t pool_size() const;
  // What opening did (e.g. rolled back an interrupted restore).
  const std::vector<std::string>& notes() const { return notes_; }

  // Plans the catalog: every snapshot keyspace gets its entry back (in the
  // slot that holds it now, else in a free one). Live keyspaces the
  // snapshot does not know are kept. Errors: invalid_argument (a snapshot
  // keyspace does not fit this pool, two overlap, or a live keyspace not in
  // the snapshot has the name, id or region of one in it — drop it first),
  // no_space (no free catalog slot).
  Status PlanCatalog(const std::vector<RestoreKeyspace>& keyspaces);

  // Checks the snapshot entry against the log of keyspace `keyspace_id`
  // (the record at its location: CRC, key, sequence, length, keyspace) and
  // queues its slot. Returns "" when it will be re-linked, else why not.
  std::string Relink(uint32_t keyspace_id, const RestoreEntry& e);

  // Writes the planned catalog and indexes: journal (durable), index slots
  // (persisted), catalog entries (persisted), journal removed — the commit
  // point. Then each restored keyspace with room after its log gets a
  // commit log (format 4): a zeroed ring, a fresh checkpoint, its catalog
  // entry rewritten (a crash before that leaves it without one). Errors:
  // io_error / no_space writing the journal (nothing changed), those of
  // RestoreJournal::Remove.
  Result<RestoreReport> Commit();

 private:
  struct Planned;
  PoolRestore(std::unique_ptr<Mapping> m, std::unique_ptr<RestoreJournal> j);
  Status LoadSuperblock();
  Planned* Find(uint32_t keyspace_id);
  // After the commit point: a commit log for each restored keyspace that
  // has room for one.
  void GiveCommitLogs(RestoreReport* report);

  std::unique_ptr<Mapping> mapping_;
  std::unique_ptr<RestoreJournal> journal_;
  uint8_t uuid_[16] = {};
  uint64_t pool_size_ = 0;
  std::vector<std::string> notes_;
  std::vector<Planned> planned_;
  std::vector<std::string> kept_;
  bool planned_catalog_ = false;
};

}  // namespace kv::store

#endif  // KV_STORE_POOL_RESTORE_H_
