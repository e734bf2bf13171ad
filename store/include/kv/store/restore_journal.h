// kv::store::RestoreJournal — where `kvadmin restore` keeps the undo record
// that makes a restore all-or-nothing.
//
// A restore rewrites a pool's catalog and indexes in place. Before it
// changes a byte it stores, durably, the catalog as it was and the old
// value of every index slot it will change; it removes the journal, durably,
// once everything it wrote is persisted — that removal is the restore's
// commit point. A journal found on open means a restore was interrupted:
// RollBackRestore puts the old bytes back (idempotent, so a crash during
// the roll-back is rolled back again) and removes it. Pool::Open does this
// for the pool file's journal, PATH.restore-journal (format:
// docs/snapshot_format.md, "Restore journal").
//
// Thread-safety: none; used under the pool's exclusive lock.
#ifndef KV_STORE_RESTORE_JOURNAL_H_
#define KV_STORE_RESTORE_JOURNAL_H_

#include <memory>
#include <string>
#include <string_view>

#include "kv/status.h"
#include "kv/store/mapping.h"

namespace kv::store {

class RestoreJournal {
 public:
  virtual ~RestoreJournal() = default;
  // The journal's bytes. not_found when there is none; io_error.
  virtual Result<std::string> Read() = 0;
  // Stores `bytes` as the journal, durably, all or nothing. io_error,
  // no_space.
  virtual Status Write(std::string_view bytes) = 0;
  // Removes the journal, durably (ok when there is none). io_error.
  virtual Status Remove() = 0;
  // Where it lives, for messages.
  virtual std::string name() const = 0;
};

// The journal of the pool file at `pool_path`: PATH.restore-journal,
// written as PATH.restore-journal.tmp, fsynced, renamed, directory fsynced.
std::unique_ptr<RestoreJournal> PoolFileRestoreJournal(
    const std::string& pool_path);

// Rolls back the restore `journal` describes, if there is one: catalog and
// index slots of the pool in `m` get their journalled bytes back (persisted),
// then the journal is removed; *note says what was done (empty when there
// was no journal). Errors: unavailable (a journal exists and `m` is
// read-only: a writable open must roll it back first), corruption (the
// journal is damaged or belongs to another pool: nothing is changed, the
// message says what to do), io_error.
Status RollBackRestore(Mapping* m, RestoreJournal* journal, std::string* note);

}  // namespace kv::store

#endif  // KV_STORE_RESTORE_JOURNAL_H_
