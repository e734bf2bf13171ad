// SnapshotDb — one kvadmin snapshot: a RocksDB database with the column
// families of snapshot_format.h, created once (Create) or read (Open).
//
// Create uses options for a database written once and then only read:
// no WAL, no automatic compactions (the writer compacts once at the end),
// LZ4 blocks with ZSTD at the bottom level, 64 KiB blocks. Open is
// read-only and refuses anything that is not a complete snapshot of a
// schema version this kvadmin reads.
// Thread-safety: as rocksdb::DB (reads from any thread; one writer).
#ifndef KV_TOOLS_KVADMIN_SNAPSHOT_DB_H_
#define KV_TOOLS_KVADMIN_SNAPSHOT_DB_H_

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <memory>
#include <string>
#include <vector>

#include "kv/status.h"
#include "snapshot_format.h"

namespace kv::kvadmin {

class SnapshotDb {
 public:
  enum Cf { kMeta = 0, kCatalog, kSegments, kEntries, kCfCount };

  // A new, empty snapshot database in `dir` (must not exist). io_error.
  static Result<std::unique_ptr<SnapshotDb>> Create(const std::string& dir);
  // Opens the snapshot in `dir` read-only. Errors: not_found (no such
  // directory), invalid_argument (not RocksDB, not an rpkv snapshot, or a
  // schema version this kvadmin does not read), corruption (damaged,
  // truncated, or left incomplete by an interrupted kvadmin snapshot).
  static Result<std::unique_ptr<SnapshotDb>> Open(const std::string& dir);
  ~SnapshotDb();

  // The options Create uses (SstFileWriter needs the same).
  static rocksdb::Options WriteOnceOptions();

  rocksdb::DB* db() { return db_.get(); }
  rocksdb::ColumnFamilyHandle* cf(Cf c) { return handles_[c]; }
  const std::string& dir() const { return dir_; }

  // A meta value. not_found when absent.
  Result<std::string> Meta(const std::string& key);
  // A decimal meta value. corruption when absent or not a number.
  Result<uint64_t> MetaNumber(const std::string& key);
  // Every keyspace of the catalog, by id. corruption.
  Result<std::vector<snapshot::CatalogValue>> Catalog();
  // An iterator that verifies block checksums and reads ahead.
  std::unique_ptr<rocksdb::Iterator> Scan(Cf c);

  // Writing (Create only): a batch without WAL; ingest finished SST files
  // (moved) into `c`; Flush + CompactRange of every column family.
  Status Write(rocksdb::WriteBatch* batch);
  Status Ingest(Cf c, const std::vector<std::string>& files);
  Status Finish();

 private:
  SnapshotDb(std::string dir) : dir_(std::move(dir)) {}
  Status Validate();

  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned by db_
  rocksdb::ColumnFamilyHandle* default_ = nullptr;
};

// RocksDB's status as ours, with `what` in front of its message.
Status FromRocks(const rocksdb::Status& s, const std::string& what);

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_SNAPSHOT_DB_H_
