// kvadmin restore: the pool's catalog and indexes rebuilt from a snapshot.
//
// Everything is read and checked before the pool changes: the snapshot
// (schema, completeness, entries checksum), that it is of this pool (uuid,
// unless --force), the catalog plan, and every entry against the log.
// Only then PoolRestore::Commit writes — all or nothing across a crash.
#include <cctype>
#include <map>
#include <ostream>

#include "commands.h"
#include "kv/store/pool.h"
#include "kv/store/pool_format.h"
#include "kv/store/pool_restore.h"
#include "pool_walk.h"
#include "snapshot_commands.h"
#include "snapshot_db.h"
#include "snapshot_entries.h"

namespace kv::kvadmin {
namespace {
namespace sf = snapshot;
constexpr size_t kFirstFew = 5;  // entries listed without --verbose

// A reason without its numbers ("the log at offset N …"), to count the
// entries that failed the same way.
std::string Category(const std::string& why) {
  std::string out;
  for (size_t i = 0; i < why.size(); i++) {
    const bool word_start =
        i == 0 || !isalnum(static_cast<unsigned char>(why[i - 1]));
    if (why[i] >= '0' && why[i] <= '9' && word_start) {
      out += 'N';
      while (i + 1 < why.size() && why[i + 1] >= '0' && why[i + 1] <= '9') i++;
    } else {
      out += why[i];
    }
  }
  return out;
}
}  // namespace

int Restore(const std::string& pool_path, const std::string& dir, bool force,
            bool verbose, std::ostream& os, std::ostream& err) {
  if (pool_path.empty()) {
    return Fail(err, Status::InvalidArgument("--pool=PATH is required"));
  }
  if (dir.empty()) {
    return Fail(err, Status::InvalidArgument("--snapshot=DIR is required"));
  }
  auto db = SnapshotDb::Open(dir);
  if (!db.ok()) return Fail(err, db.status());
  Result<std::string> uuid = (*db)->Meta(sf::meta::kPoolUuid);
  if (!uuid.ok()) return Fail(err, uuid.status());
  // Region layouts differ between pool formats (format 2 put the index
  // header page before the index): a snapshot re-links slots by position.
  Result<std::string> format = (*db)->Meta(sf::meta::kPoolFormatVersion);
  if (!format.ok()) return Fail(err, format.status());
  // Format 3 only added a record flag and format 4 a commit log after the
  // log (restore gives one to each keyspace with room for it there): the
  // slots of a format 2, 3 or 4 snapshot lie where format 4's do (the pool
  // it is restored into is upgraded at open).
  static_assert(store::pool_format::kFormatVersion == 4,
                "a new pool format: say whether its snapshots restore here");
  if (*format != "4" && *format != "3" && *format != "2") {
    return Fail(err, Status::InvalidArgument(
                         "snapshot " + dir + " is of a format " + *format +
                         " pool; this kvadmin restores format 2, 3 and 4 "
                         "snapshots only (nothing changed)"));
  }
  Result<std::vector<sf::CatalogValue>> catalog = (*db)->Catalog();
  if (!catalog.ok()) return Fail(err, catalog.status());

  auto restore = store::PoolRestore::Open(pool_path);
  if (!restore.ok()) return Fail(err, restore.status());
  store::PoolRestore& r = **restore;
  for (const std::string& n : r.notes()) os << "note: " << n << "\n";
  if (*uuid != r.uuid()) {
    if (!force) {
      return Fail(err, Status::InvalidArgument(
                           "snapshot " + dir + " is of another pool (uuid " +
                           *uuid + "); " + pool_path + " is pool " + r.uuid() +
                           ". Nothing changed; --force restores it anyway"));
    }
    os << "warning: --force: restoring a snapshot of pool " << *uuid
       << " into pool " << r.uuid() << "\n";
  }
  std::vector<store::RestoreKeyspace> plan;
  for (const sf::CatalogValue& c : *catalog) {
    store::RestoreKeyspace k;
    k.name = c.name;
    k.id = c.id;
    k.region_offset = c.region_offset;
    k.region_size = c.region_size;
    k.bucket_count = c.bucket_count;
    k.log_offset = c.log_offset;
    k.log_size = c.log_size;
    k.segment_size = c.segment_size;
    k.max_value_size = c.max_value_size;
    plan.push_back(k);
  }
  Status st = r.PlanCatalog(plan);
  if (!st.ok()) return Fail(err, st);

  std::map<uint32_t, std::string> names;
  for (const auto& c : *catalog) names[c.id] = c.name;
  uint64_t unlinked = 0;
  std::vector<std::string> why_not;  // printed only once the snapshot is sound
  std::map<std::string, uint64_t> reasons;  // why -> entries
  {
    Result<uint64_t> total = (*db)->MetaNumber(sf::meta::kEntries);
    Progress progress("restore", total.ok() ? *total : 0);
    EntryScan scan(db->get());
    for (; scan.valid(); scan.Next()) {
      const sf::EntryValue& e = scan.entry();
      store::RestoreEntry re;
      re.key = scan.key();
      re.slot = e.slot;
      re.log_offset = e.log_offset;
      re.length = e.length;
      re.sequence = e.sequence;
      re.crc = e.crc;
      re.tombstone = (e.flags & 1) != 0;
      const std::string why = r.Relink(scan.id(), re);
      progress.Add(1);
      if (why.empty()) continue;
      unlinked++;
      reasons[Category(why)]++;
      if (!verbose && why_not.size() >= kFirstFew) continue;
      auto n = names.find(scan.id());
      why_not.push_back("not re-linked: keyspace " +
                        (n == names.end() ? "id " + std::to_string(scan.id())
                                          : "'" + n->second + "'") +
                        " key '" + PrintableKey(re.key) + "': " + why);
    }
    st = scan.Finish();
  }
  if (!st.ok()) {
    return Fail(err, Status::Corruption(st.message() + "; nothing changed"));
  }
  Result<store::RestoreReport> report = r.Commit();
  if (!report.ok()) return Fail(err, report.status());
  restore->reset();  // releases the pool's lock

  for (const std::string& l : why_not) os << l << "\n";
  if (!verbose && unlinked > why_not.size()) {
    os << "... and " << unlinked - why_not.size()
       << " more not re-linked (--verbose lists every one)\n";
  }
  if (unlinked > 0) {
    os << "entries not re-linked, by reason:\n";
    for (const auto& [why, n] : reasons) {
      os << "  " << n << (n == 1 ? " entry: " : " entries: ") << why << "\n";
    }
    os << "note: a snapshot holds no values; entries whose records are no "
          "longer in this pool's log cannot come back (it is not a "
          "backup)\n";
  }
  for (const std::string& k : report->kept) {
    os << "note: kept keyspace '" << k << "' (not in the snapshot)\n";
  }
  for (const std::string& k : report->without_commit_log) {
    os << "note: keyspace '" << k
       << "' has no room for a commit log after its log (the snapshot's "
          "keyspace had none): its puts persist their index pages "
          "(docs/format.md, \"Commit log\")\n";
  }
  os << "restored " << report->keyspaces << " keyspaces from " << dir << ": "
     << report->relinked << " entries re-linked, " << unlinked
     << " could not be, " << report->slots_changed << " index slots changed\n";
  // What the pool reads as now.
  store::PoolOptions po;
  po.read_only = true;
  auto pool = store::Pool::Open(pool_path, po);
  if (!pool.ok()) return Fail(err, pool.status());
  store::CheckReport c = (*pool)->Check();
  for (const std::string& p : c.problems) os << "problem: " << p << "\n";
  os << "check: " << (c.ok() ? "ok" : "CORRUPT") << ", " << c.slots
     << " slots, " << c.records_verified << " records verified\n";
  if (!c.ok()) return kExitFailed;
  return unlinked == 0 ? kExitOk : kExitCheckFailed;
}

}  // namespace kv::kvadmin
