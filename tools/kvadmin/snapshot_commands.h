// kvadmin's snapshot commands: offline metadata snapshots of a pool in
// RocksDB (schema: docs/snapshot_format.md). Each returns a process exit
// code like commands.h: 0 ok, 1 failed (message on err), 3 verify found
// differences / restore could not re-link every entry.
#ifndef KV_TOOLS_KVADMIN_SNAPSHOT_COMMANDS_H_
#define KV_TOOLS_KVADMIN_SNAPSHOT_COMMANDS_H_

#include <cstdint>
#include <iosfwd>
#include <string>

namespace kv::kvadmin {

// Writes a new snapshot of the pool at `pool` into the directory `out`
// (must not exist). Refused while another process has the pool open for
// writing (the message names it).
int Snapshot(const std::string& pool, const std::string& out, std::ostream& os,
             std::ostream& err);
// Prints what the snapshot at `dir` holds; `json` for one JSON object.
int SnapshotInfo(const std::string& dir, bool json, std::ostream& os,
                 std::ostream& err);
// Compares the pool with the snapshot: keys added, removed and changed
// (sequence or CRC) per keyspace, at most `limit` of them listed. 0 when
// identical, 3 when different.
int Verify(const std::string& pool, const std::string& dir, uint64_t limit,
           std::ostream& os, std::ostream& err);
// Rebuilds the pool's catalog and indexes from the snapshot, re-linking
// the records that still verify; says how many entries it could not
// re-link (then exits 3): a count per reason and the first few entries,
// or every entry when `verbose`. A snapshot of another pool is refused
// unless `force`. (A snapshot holds no values: it is not a backup.)
int Restore(const std::string& pool, const std::string& dir, bool force,
            bool verbose, std::ostream& os, std::ostream& err);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_SNAPSHOT_COMMANDS_H_
