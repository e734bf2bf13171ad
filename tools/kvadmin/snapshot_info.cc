// kvadmin snapshot-info: what a snapshot holds, as text or JSON.
#include <ctime>
#include <filesystem>
#include <ostream>

#include "commands.h"
#include "snapshot_commands.h"
#include "snapshot_db.h"

namespace kv::kvadmin {
namespace {

namespace sf = snapshot;

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof(b), "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

std::string IsoTime(uint64_t unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm;
  gmtime_r(&t, &tm);
  char b[32];
  strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

struct Facts {
  std::string tool, uuid, crc;
  uint64_t created = 0, pool_size = 0, format = 0, entries = 0, skipped = 0;
  uint64_t bytes = 0;
  std::vector<sf::CatalogValue> catalog;
  std::vector<uint64_t> sealed;  // per catalog entry: segments holding keys
};

Status Read(SnapshotDb* db, Facts* f) {
  auto text = [&](const char* k, std::string* v) -> Status {
    Result<std::string> r = db->Meta(k);
    if (!r.ok()) return Status::Corruption("snapshot: " + r.status().message());
    *v = *r;
    return Status::Ok();
  };
  auto num = [&](const char* k, uint64_t* v) -> Status {
    Result<uint64_t> r = db->MetaNumber(k);
    if (!r.ok()) return r.status();
    *v = *r;
    return Status::Ok();
  };
  KV_RETURN_IF_ERROR(text(sf::meta::kTool, &f->tool));
  KV_RETURN_IF_ERROR(text(sf::meta::kPoolUuid, &f->uuid));
  KV_RETURN_IF_ERROR(text(sf::meta::kEntriesCrc, &f->crc));
  KV_RETURN_IF_ERROR(num(sf::meta::kCreatedUnix, &f->created));
  KV_RETURN_IF_ERROR(num(sf::meta::kPoolSize, &f->pool_size));
  KV_RETURN_IF_ERROR(num(sf::meta::kPoolFormatVersion, &f->format));
  KV_RETURN_IF_ERROR(num(sf::meta::kEntries, &f->entries));
  KV_RETURN_IF_ERROR(num(sf::meta::kSkippedSlots, &f->skipped));
  Result<std::vector<sf::CatalogValue>> c = db->Catalog();
  if (!c.ok()) return c.status();
  f->catalog = std::move(*c);
  f->sealed.assign(f->catalog.size(), 0);
  auto it = db->Scan(SnapshotDb::kSegments);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    sf::SegmentValue v;
    KV_RETURN_IF_ERROR(sf::DecodeSegment(it->value().ToStringView(), &v));
    uint32_t id = 0;
    KV_RETURN_IF_ERROR(
        sf::ParseIdKey(it->key().ToStringView().substr(0, 4), &id));
    for (size_t i = 0; i < f->catalog.size(); i++) {
      if (f->catalog[i].id == id && v.state != 0) f->sealed[i]++;
    }
  }
  KV_RETURN_IF_ERROR(FromRocks(it->status(), "reading " + db->dir()));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(db->dir(), ec)) {
    if (e.is_regular_file(ec)) f->bytes += e.file_size(ec);
  }
  return Status::Ok();
}

}  // namespace

int SnapshotInfo(const std::string& dir, bool json, std::ostream& os,
                 std::ostream& err) {
  if (dir.empty()) {
    return Fail(err, Status::InvalidArgument("--snapshot=DIR is required"));
  }
  auto db = SnapshotDb::Open(dir);
  if (!db.ok()) return Fail(err, db.status());
  Facts f;
  Status st = Read(db->get(), &f);
  if (!st.ok()) return Fail(err, st);
  if (json) {
    os << "{\"snapshot\":" << JsonString(dir)
       << ",\"schema_version\":" << sf::kSchemaVersion
       << ",\"tool\":" << JsonString(f.tool)
       << ",\"created_unix\":" << f.created
       << ",\"created\":" << JsonString(IsoTime(f.created))
       << ",\"pool\":{\"uuid\":" << JsonString(f.uuid)
       << ",\"size\":" << f.pool_size << ",\"format_version\":" << f.format
       << "},\"entries\":" << f.entries << ",\"skipped_slots\":" << f.skipped
       << ",\"entries_crc32c\":" << JsonString(f.crc)
       << ",\"size_bytes\":" << f.bytes << ",\"keyspaces\":[";
    for (size_t i = 0; i < f.catalog.size(); i++) {
      const auto& k = f.catalog[i];
      os << (i ? "," : "") << "{\"name\":" << JsonString(k.name)
         << ",\"id\":" << k.id << ",\"keys\":" << k.keys
         << ",\"live_bytes\":" << k.live_bytes
         << ",\"segments_in_use\":" << f.sealed[i]
         << ",\"segments\":" << k.log_size / k.segment_size
         << ",\"bucket_count\":" << k.bucket_count
         << ",\"segment_size\":" << k.segment_size
         << ",\"log_size\":" << k.log_size
         << ",\"max_value_size\":" << k.max_value_size << "}";
    }
    os << "]}\n";
    return kExitOk;
  }
  os << "snapshot:       " << dir << "\n"
     << "schema version: " << sf::kSchemaVersion << "\n"
     << "created:        " << IsoTime(f.created) << " by " << f.tool << "\n"
     << "pool uuid:      " << f.uuid << "\n"
     << "pool size:      " << f.pool_size << " (" << HumanBytes(f.pool_size)
     << "), format version " << f.format << "\n"
     << "keyspaces:      " << f.catalog.size() << "\n"
     << "entries:        " << f.entries << " (crc32c " << f.crc << ")\n"
     << "size on disk:   " << HumanBytes(f.bytes) << "\n";
  if (f.skipped > 0) {
    os << "skipped slots:  " << f.skipped
       << " (did not hold a committed version)\n";
  }
  for (size_t i = 0; i < f.catalog.size(); i++) {
    const auto& k = f.catalog[i];
    os << "keyspace " << k.name << " (id " << k.id << "): " << k.keys
       << " keys, live " << HumanBytes(k.live_bytes) << ", " << f.sealed[i]
       << " of " << k.log_size / k.segment_size << " segments in use, "
       << k.bucket_count << " buckets\n";
  }
  return kExitOk;
}

}  // namespace kv::kvadmin
