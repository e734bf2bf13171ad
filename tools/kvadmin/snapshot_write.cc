// kvadmin snapshot: the pool's superblock facts, catalog, segment table and
// index entries (no values) into a new RocksDB database.
//
// The pool is opened read-only, which takes its lock shared: no writer can
// hold it meanwhile. The database is built in DIR.partial-PID and renamed
// to DIR only when complete (meta "complete" = 1 is its last write), so DIR
// never holds half a snapshot. Entries are bulk-loaded: sorted per
// keyspace, written with SstFileWriter, ingested; the small column
// families go in one WriteBatch; one Flush + CompactRange at the end.
#include <fcntl.h>
#include <rocksdb/sst_file_writer.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <ostream>

#include "commands.h"
#include "kv/store/pool.h"
#include "pool_walk.h"
#include "progress.h"
#include "snapshot_commands.h"
#include "snapshot_db.h"

#ifndef KV_VERSION
#define KV_VERSION "unknown"
#endif

namespace kv::kvadmin {
namespace {

namespace sf = snapshot;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kEntriesPerSst = 4'000'000;

struct Totals {
  double read = 0, sort = 0, write = 0, ingest = 0;  // seconds per phase
  uint64_t entries = 0;
  uint64_t segments = 0;
  uint64_t skipped = 0;
  uint32_t crc = 0;
};

// Writes the sorted entries of one keyspace into SST files under `dir`.
Status WriteEntries(SnapshotDb* db, const WalkedKeyspace& w,
                    std::vector<std::string>* files, Totals* t,
                    Progress* progress) {
  std::unique_ptr<rocksdb::SstFileWriter> sst;
  uint64_t in_file = 0;
  auto finish = [&]() -> Status {
    if (!sst) return Status::Ok();
    KV_RETURN_IF_ERROR(FromRocks(sst->Finish(), "writing " + files->back()));
    sst.reset();
    return Status::Ok();
  };
  const rocksdb::Options options = SnapshotDb::WriteOnceOptions();
  const auto start = Clock::now();
  char value[sf::kEntryValueSize];
  for (size_t i = 0; i < w.items.size(); i++) {
    const auto& it = w.items[i];
    w.PrefetchAhead(i);
    if (!sst || in_file == kEntriesPerSst) {
      KV_RETURN_IF_ERROR(finish());
      files->push_back(db->dir() + "/bulk-" + std::to_string(files->size()) +
                       ".sst");
      sst = std::make_unique<rocksdb::SstFileWriter>(
          rocksdb::EnvOptions(), options, db->cf(SnapshotDb::kEntries));
      KV_RETURN_IF_ERROR(
          FromRocks(sst->Open(files->back()), "creating " + files->back()));
      in_file = 0;
    }
    const std::string key = sf::EntryKey(w.info.id, w.key(it));
    sf::EncodeEntry(it.entry, value);
    t->crc = sf::ExtendEntriesCrc(t->crc, key,
                                  std::string_view(value, sizeof(value)));
    KV_RETURN_IF_ERROR(FromRocks(
        sst->Put(key, rocksdb::Slice(value, sizeof(value))), "bulk load"));
    in_file++;
    t->entries++;
    progress->Add(1);
  }
  KV_RETURN_IF_ERROR(finish());
  t->write += std::chrono::duration<double>(Clock::now() - start).count();
  return Status::Ok();
}

Status Build(store::Pool* pool, SnapshotDb* db, std::ostream& os,
             std::ostream& err, Totals* t) {
  const store::PoolInfo info = pool->Info();
  rocksdb::WriteBatch batch;
  auto meta = [&](const char* k, const std::string& v) {
    return FromRocks(batch.Put(db->cf(SnapshotDb::kMeta), k, v), "batch");
  };
  KV_RETURN_IF_ERROR(
      meta(sf::meta::kSchemaVersion, std::to_string(sf::kSchemaVersion)));
  KV_RETURN_IF_ERROR(meta(sf::meta::kTool, "kvadmin " KV_VERSION));
  KV_RETURN_IF_ERROR(
      meta(sf::meta::kCreatedUnix,
           std::to_string(static_cast<uint64_t>(time(nullptr)))));
  KV_RETURN_IF_ERROR(meta(sf::meta::kPoolUuid, info.uuid));
  KV_RETURN_IF_ERROR(meta(sf::meta::kPoolSize, std::to_string(info.size)));
  KV_RETURN_IF_ERROR(
      meta(sf::meta::kPoolFormatVersion, std::to_string(info.format_version)));

  std::vector<store::KeyspaceInfo> list = pool->ListKeyspaces();
  std::sort(list.begin(), list.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::vector<std::string> files;
  {
    Progress progress("", 0);
    for (const auto& k : list) {
      auto ks = pool->GetKeyspace(k.name);
      if (!ks.ok()) return ks.status();
      KV_RETURN_IF_ERROR((*ks)->ReadableOrWhy());  // a replay pending
      progress.Phase("keyspace " + k.name + ": reading and sorting",
                     (*ks)->Stats().keys);
      const WalkedKeyspace w = WalkKeyspace(**ks, &progress);
      progress.Phase("keyspace " + k.name + ": writing", w.items.size());
      sf::CatalogValue c;
      c.id = k.id;
      c.name = k.name;
      c.region_offset = k.region_offset;
      c.region_size = k.region_size;
      c.bucket_count = k.bucket_count;
      c.log_offset = k.log_offset;
      c.log_size = k.log_size;
      c.segment_size = k.segment_size;
      c.max_value_size = k.max_value_size;
      c.keys = w.items.size();
      c.live_bytes = w.live_bytes;
      KV_RETURN_IF_ERROR(
          FromRocks(batch.Put(db->cf(SnapshotDb::kCatalog), sf::IdKey(k.id),
                              sf::EncodeCatalog(c)),
                    "batch"));
      for (uint32_t s = 0; s < w.segments.size(); s++) {
        KV_RETURN_IF_ERROR(FromRocks(
            batch.Put(db->cf(SnapshotDb::kSegments), sf::SegmentKey(k.id, s),
                      sf::EncodeSegment(w.segments[s])),
            "batch"));
      }
      t->segments += w.segments.size();
      t->read += w.read_seconds;
      t->sort += w.sort_seconds;
      KV_RETURN_IF_ERROR(WriteEntries(db, w, &files, t, &progress));
      t->skipped += w.skipped;
      for (const std::string& n : w.skip_notes) {
        err << "kvadmin: keyspace '" << k.name << "': skipped " << n << "\n";
      }
      if (w.skipped > w.skip_notes.size()) {
        err << "kvadmin: keyspace '" << k.name << "': skipped "
            << w.skipped - w.skip_notes.size() << " more slots\n";
      }
      if (w.duplicates > 0) {
        os << "note: keyspace '" << k.name << "': " << w.duplicates
           << " older versions of updated keys left by an unclean shutdown "
              "were not taken (the newest version is)\n";
      }
    }
  }
  KV_RETURN_IF_ERROR(meta(sf::meta::kKeyspaces, std::to_string(list.size())));
  KV_RETURN_IF_ERROR(meta(sf::meta::kEntries, std::to_string(t->entries)));
  KV_RETURN_IF_ERROR(meta(sf::meta::kSegments, std::to_string(t->segments)));
  KV_RETURN_IF_ERROR(meta(sf::meta::kSkippedSlots, std::to_string(t->skipped)));
  char crc[16];
  snprintf(crc, sizeof(crc), "%08x", t->crc);
  KV_RETURN_IF_ERROR(meta(sf::meta::kEntriesCrc, crc));
  const auto ingest = Clock::now();
  KV_RETURN_IF_ERROR(db->Write(&batch));
  KV_RETURN_IF_ERROR(db->Ingest(SnapshotDb::kEntries, files));
  // Last: a snapshot without it is refused as incomplete.
  rocksdb::WriteBatch done;
  KV_RETURN_IF_ERROR(FromRocks(
      done.Put(db->cf(SnapshotDb::kMeta), sf::meta::kComplete, "1"), "batch"));
  KV_RETURN_IF_ERROR(db->Write(&done));
  KV_RETURN_IF_ERROR(db->Finish());
  t->ingest = std::chrono::duration<double>(Clock::now() - ingest).count();
  return Status::Ok();
}

Status SyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("opening " + path);
  const int rc = fsync(fd);
  close(fd);
  return rc == 0 ? Status::Ok() : Status::IoError("fsync of " + path);
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  }
  return n;
}

}  // namespace

int Snapshot(const std::string& pool_path, const std::string& out,
             std::ostream& os, std::ostream& err) {
  if (pool_path.empty()) {
    return Fail(err, Status::InvalidArgument("--pool=PATH is required"));
  }
  if (out.empty()) {
    return Fail(err, Status::InvalidArgument("--out=DIR is required"));
  }
  std::error_code ec;
  if (std::filesystem::exists(out, ec)) {
    return Fail(err, Status::InvalidArgument(
                         "--out " + out +
                         " exists; a snapshot never overwrites: choose a new "
                         "directory"));
  }
  const auto start = Clock::now();
  store::PoolOptions po;
  po.read_only = true;
  auto pool = store::Pool::Open(pool_path, po);
  if (!pool.ok()) {
    Status st = pool.status();
    if (st.code() == StatusCode::kBusy) {
      st = Status::Busy("cannot snapshot a pool in use: " + st.message());
    }
    return Fail(err, st);
  }
  const std::filesystem::path target(out);
  const std::string parent =
      target.has_parent_path() ? target.parent_path().string() : ".";
  const std::string tmp = out + ".partial-" + std::to_string(getpid());
  Totals t;
  Status st;
  {
    auto db = SnapshotDb::Create(tmp);
    st = db.ok() ? Build(pool->get(), db->get(), os, err, &t) : db.status();
  }  // closed before the rename
  if (st.ok()) st = SyncPath(tmp);
  if (st.ok() && renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(),
                           RENAME_NOREPLACE) != 0) {
    st = Status::IoError("renaming " + tmp + " to " + out + ": " +
                         strerror(errno));
  }
  if (st.ok()) st = SyncPath(parent);
  if (!st.ok()) {
    std::filesystem::remove_all(tmp, ec);
    return Fail(err, st);
  }
  const double secs =
      std::chrono::duration<double>(Clock::now() - start).count();
  char rate[160];
  snprintf(rate, sizeof(rate),
           "%.2f s (%.0f keys/s: read and verify %.2f s, sort %.2f s, write "
           "%.2f s, ingest and compact %.2f s)",
           secs, secs > 0 ? t.entries / secs : 0.0, t.read, t.sort, t.write,
           t.ingest);
  os << "snapshot of pool " << (*pool)->Info().uuid << " written to " << out
     << ": " << (*pool)->ListKeyspaces().size() << " keyspaces, " << t.entries
     << " entries, " << t.segments << " segments, " << HumanBytes(DirBytes(out))
     << " on disk, in " << rate << "\n";
  if (t.skipped > 0) {
    os << "warning: " << t.skipped
       << " index slots do not hold a committed version and were left out "
          "(kvadmin check lists them)\n";
  }
  return kExitOk;
}

}  // namespace kv::kvadmin
