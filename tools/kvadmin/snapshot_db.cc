#include "snapshot_db.h"

#include <rocksdb/table.h>

#include <algorithm>
#include <filesystem>

namespace kv::kvadmin {
namespace {

namespace sf = snapshot;

const char* const kCfNames[SnapshotDb::kCfCount] = {
    sf::kMetaCf, sf::kCatalogCf, sf::kSegmentsCf, sf::kEntriesCf};

std::vector<rocksdb::ColumnFamilyDescriptor> Descriptors(
    const rocksdb::Options& o) {
  std::vector<rocksdb::ColumnFamilyDescriptor> d;
  d.emplace_back(rocksdb::kDefaultColumnFamilyName, o);
  for (const char* n : kCfNames) d.emplace_back(n, o);
  return d;
}

}  // namespace

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  const std::string m = what + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(m);
  if (s.IsCorruption()) return Status::Corruption(m);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(m);
  if (s.IsNoSpace()) return Status::NoSpace(m);
  return Status::IoError(m);
}

rocksdb::Options SnapshotDb::WriteOnceOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.error_if_exists = true;
  o.create_missing_column_families = true;
  o.disable_auto_compactions = true;  // one CompactRange at the end
  o.level_compaction_dynamic_level_bytes = true;
  o.compression = rocksdb::kLZ4Compression;
  o.bottommost_compression = rocksdb::kZSTD;
  o.write_buffer_size = 64 << 20;
  o.max_background_jobs = 2;
  o.keep_log_file_num = 1;
  o.paranoid_checks = true;
  rocksdb::BlockBasedTableOptions t;
  t.block_size = 64 << 10;  // scanned front to back, rarely probed
  t.format_version = 5;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

Result<std::unique_ptr<SnapshotDb>> SnapshotDb::Create(const std::string& dir) {
  std::unique_ptr<SnapshotDb> s(new SnapshotDb(dir));
  const rocksdb::Options o = WriteOnceOptions();
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  rocksdb::DB* db = nullptr;
  KV_RETURN_IF_ERROR(FromRocks(
      rocksdb::DB::Open(rocksdb::DBOptions(o), dir, Descriptors(o), &h, &db),
      "creating snapshot database " + dir));
  s->db_.reset(db);
  s->default_ = h[0];
  s->handles_.assign(h.begin() + 1, h.end());
  return s;
}

Result<std::unique_ptr<SnapshotDb>> SnapshotDb::Open(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("no snapshot at " + dir + " (not a directory)");
  }
  rocksdb::Options o = WriteOnceOptions();
  o.create_if_missing = false;
  o.error_if_exists = false;
  o.max_open_files = -1;  // open (and check) every table file now
  std::vector<std::string> names;
  rocksdb::Status rs = rocksdb::DB::ListColumnFamilies(o, dir, &names);
  if (!rs.ok()) {
    if (rs.IsCorruption()) {
      return FromRocks(rs, "snapshot " + dir + " is damaged");
    }
    return Status::InvalidArgument(dir +
                                   " is not an rpkv snapshot (no RocksDB "
                                   "database there: " +
                                   rs.ToString() + ")");
  }
  for (const char* want : kCfNames) {
    if (std::find(names.begin(), names.end(), want) == names.end()) {
      return Status::InvalidArgument(
          dir + " is a RocksDB database but not an rpkv snapshot (it has no '" +
          want + "' column family)");
    }
  }
  std::unique_ptr<SnapshotDb> s(new SnapshotDb(dir));
  std::vector<rocksdb::ColumnFamilyDescriptor> d;
  for (const std::string& n : names) d.emplace_back(n, o);
  std::vector<rocksdb::ColumnFamilyHandle*> h;
  rocksdb::DB* db = nullptr;
  rs = rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(o), dir, d, &h, &db);
  if (!rs.ok()) {
    return Status::Corruption("snapshot " + dir +
                              " is damaged or truncated: " + rs.ToString());
  }
  s->db_.reset(db);
  s->handles_.resize(kCfCount);
  for (size_t i = 0; i < names.size(); i++) {
    bool ours = false;
    for (int c = 0; c < kCfCount; c++) {
      if (names[i] == kCfNames[c]) {
        s->handles_[c] = h[i];
        ours = true;
      }
    }
    if (!ours && names[i] == rocksdb::kDefaultColumnFamilyName) {
      s->default_ = h[i];
    } else if (!ours) {
      (void)db->DestroyColumnFamilyHandle(h[i]);
    }
  }
  KV_RETURN_IF_ERROR(s->Validate());
  return s;
}

Status SnapshotDb::Validate() {
  Result<std::string> v = Meta(sf::meta::kSchemaVersion);
  if (!v.ok()) {
    return v.status().IsNotFound()
               ? Status::InvalidArgument(dir_ +
                                         " is not an rpkv snapshot (no "
                                         "schema_version in its meta)")
               : v.status();
  }
  if (*v != std::to_string(sf::kSchemaVersion)) {
    return Status::InvalidArgument("snapshot " + dir_ + " has schema version " +
                                   *v + "; this kvadmin reads version " +
                                   std::to_string(sf::kSchemaVersion) +
                                   " (use the kvadmin that wrote it)");
  }
  Result<std::string> complete = Meta(sf::meta::kComplete);
  if (!complete.ok() || *complete != "1") {
    return Status::Corruption("snapshot " + dir_ +
                              " is incomplete (an interrupted kvadmin "
                              "snapshot?); take a new one");
  }
  return Status::Ok();
}

SnapshotDb::~SnapshotDb() {
  if (!db_) return;
  for (auto* h : handles_) {
    if (h != nullptr) (void)db_->DestroyColumnFamilyHandle(h);
  }
  if (default_ != nullptr) (void)db_->DestroyColumnFamilyHandle(default_);
  (void)db_->Close();
}

Result<std::string> SnapshotDb::Meta(const std::string& key) {
  std::string v;
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  rocksdb::Status s = db_->Get(ro, cf(kMeta), key, &v);
  if (s.IsNotFound()) return Status::NotFound("snapshot meta has no " + key);
  KV_RETURN_IF_ERROR(FromRocks(s, "reading snapshot " + dir_));
  return v;
}

Result<uint64_t> SnapshotDb::MetaNumber(const std::string& key) {
  Result<std::string> v = Meta(key);
  if (!v.ok())
    return Status::Corruption("snapshot " + dir_ + ": " + v.status().message());
  uint64_t n = 0;
  if (v->empty() || v->size() > 20) {
    return Status::Corruption("snapshot meta " + key + " is not a number");
  }
  for (char c : *v) {
    if (c < '0' || c > '9') {
      return Status::Corruption("snapshot meta " + key + " is not a number");
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

std::unique_ptr<rocksdb::Iterator> SnapshotDb::Scan(Cf c) {
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  ro.fill_cache = false;
  ro.readahead_size = 4 << 20;
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(ro, cf(c)));
}

Result<std::vector<sf::CatalogValue>> SnapshotDb::Catalog() {
  std::vector<sf::CatalogValue> out;
  auto it = Scan(kCatalog);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint32_t id = 0;
    sf::CatalogValue v;
    KV_RETURN_IF_ERROR(sf::ParseIdKey(it->key().ToStringView(), &id));
    KV_RETURN_IF_ERROR(sf::DecodeCatalog(it->value().ToStringView(), &v));
    if (v.id != id) return Status::Corruption("catalog key and id differ");
    out.push_back(std::move(v));
  }
  KV_RETURN_IF_ERROR(FromRocks(it->status(), "reading snapshot " + dir_));
  return out;
}

Status SnapshotDb::Write(rocksdb::WriteBatch* batch) {
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // Finish flushes; a crash leaves no usable snapshot
  return FromRocks(db_->Write(wo, batch), "writing snapshot " + dir_);
}

Status SnapshotDb::Ingest(Cf c, const std::vector<std::string>& files) {
  if (files.empty()) return Status::Ok();
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  return FromRocks(db_->IngestExternalFile(cf(c), files, io),
                   "ingesting into snapshot " + dir_);
}

Status SnapshotDb::Finish() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  std::vector<rocksdb::ColumnFamilyHandle*> all = handles_;
  KV_RETURN_IF_ERROR(FromRocks(db_->Flush(fo, all), "flushing " + dir_));
  rocksdb::CompactRangeOptions co;
  for (auto* h : handles_) {
    KV_RETURN_IF_ERROR(FromRocks(db_->CompactRange(co, h, nullptr, nullptr),
                                 "compacting " + dir_));
  }
  return Status::Ok();
}

}  // namespace kv::kvadmin
