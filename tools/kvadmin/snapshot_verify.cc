// kvadmin verify: the pool against a snapshot, key by key. Both sides are
// in key order (the snapshot's entries column family, the pool's index
// sorted by WalkKeyspace), so one merge pass compares them.
#include <algorithm>
#include <map>
#include <optional>
#include <ostream>

#include "commands.h"
#include "kv/store/pool.h"
#include "pool_walk.h"
#include "progress.h"
#include "snapshot_commands.h"
#include "snapshot_db.h"
#include "snapshot_entries.h"

namespace kv::kvadmin {
namespace {

namespace sf = snapshot;

struct Diff {
  uint64_t added = 0, removed = 0, changed = 0, relocated = 0;
  uint64_t in_snapshot = 0, in_pool = 0;
  bool catalog_changed = false;
  std::string catalog_note;
  uint64_t total() const {
    return added + removed + changed + (catalog_changed ? 1 : 0);
  }
};

class Listing {
 public:
  explicit Listing(uint64_t limit) : limit_(limit) {}
  void Add(const std::string& line) {
    if (lines_.size() < limit_) {
      lines_.push_back(line);
    } else {
      more_++;
    }
  }
  void Print(std::ostream& os) const {
    for (const auto& l : lines_) os << l << "\n";
    if (more_ > 0) {
      os << "... " << more_ << " more not listed (--limit=" << limit_ << ")\n";
    }
  }

 private:
  uint64_t limit_;
  std::vector<std::string> lines_;
  uint64_t more_ = 0;
};

std::string Geometry(const store::KeyspaceInfo& k) {
  return "region " + std::to_string(k.region_offset) + "+" +
         std::to_string(k.region_size) + ", " + std::to_string(k.bucket_count) +
         " buckets, log " + std::to_string(k.log_size) + " in " +
         std::to_string(k.segment_size) + "-byte segments, max value " +
         std::to_string(k.max_value_size);
}

std::string Geometry(const sf::CatalogValue& k) {
  store::KeyspaceInfo i;
  i.region_offset = k.region_offset;
  i.region_size = k.region_size;
  i.bucket_count = k.bucket_count;
  i.log_size = k.log_size;
  i.segment_size = k.segment_size;
  i.max_value_size = k.max_value_size;
  return Geometry(i);
}

}  // namespace

int Verify(const std::string& pool_path, const std::string& dir, uint64_t limit,
           std::ostream& os, std::ostream& err) {
  if (pool_path.empty()) {
    return Fail(err, Status::InvalidArgument("--pool=PATH is required"));
  }
  if (dir.empty()) {
    return Fail(err, Status::InvalidArgument("--snapshot=DIR is required"));
  }
  auto db = SnapshotDb::Open(dir);
  if (!db.ok()) return Fail(err, db.status());
  store::PoolOptions po;
  po.read_only = true;
  auto pool = store::Pool::Open(pool_path, po);
  if (!pool.ok()) return Fail(err, pool.status());
  Result<std::string> uuid = (*db)->Meta(sf::meta::kPoolUuid);
  if (!uuid.ok()) return Fail(err, uuid.status());
  const std::string pool_uuid = (*pool)->Info().uuid;
  if (*uuid != pool_uuid) {
    return Fail(err, Status::InvalidArgument(
                         "snapshot " + dir + " is of another pool (uuid " +
                         *uuid + "); " + pool_path + " is pool " + pool_uuid));
  }
  Result<std::vector<sf::CatalogValue>> catalog = (*db)->Catalog();
  if (!catalog.ok()) return Fail(err, catalog.status());

  // Keyspaces of both sides by id: (snapshot entry, pool keyspace).
  std::map<uint32_t, std::pair<const sf::CatalogValue*, std::string>> ids;
  for (const auto& c : *catalog) ids[c.id].first = &c;
  for (const auto& k : (*pool)->ListKeyspaces()) ids[k.id].second = k.name;

  EntryScan scan(db->get());
  Listing listing(limit);
  std::optional<Progress> progress(std::in_place, "", 0);
  std::vector<std::pair<std::string, Diff>> diffs;
  Status orphan;
  for (const auto& [id, sides] : ids) {
    const sf::CatalogValue* snap = sides.first;
    const std::string name = snap ? snap->name : sides.second;
    while (scan.valid() && scan.id() < id) {
      orphan = Status::Corruption(
          "snapshot " + dir + ": entries of keyspace id " +
          std::to_string(scan.id()) + " that its catalog does not list");
      scan.Next();
    }
    Diff d;
    WalkedKeyspace w;
    if (!sides.second.empty()) {
      auto ks = (*pool)->GetKeyspace(sides.second);
      if (!ks.ok()) return Fail(err, ks.status());
      const Status readable = (*ks)->ReadableOrWhy();  // a replay pending
      if (!readable.ok()) return Fail(err, readable);
      progress->Phase("keyspace " + name + ": reading and sorting",
                      (*ks)->Stats().keys);
      w = WalkKeyspace(**ks, &*progress);
      if (snap != nullptr && Geometry(w.info) != Geometry(*snap)) {
        d.catalog_changed = true;
        d.catalog_note = "~ keyspace " + name + ": was " + Geometry(*snap) +
                         "; is " + Geometry(w.info);
      }
    } else {
      d.catalog_changed = true;
      d.catalog_note = "- keyspace " + name + " (dropped since the snapshot)";
    }
    if (snap == nullptr) {
      d.catalog_changed = true;
      d.catalog_note = "+ keyspace " + name + " (created since the snapshot)";
    }
    if (d.catalog_changed) listing.Add(d.catalog_note);
    d.in_pool = w.items.size();
    progress->Phase("keyspace " + name + ": comparing",
                    snap != nullptr ? snap->keys : 0);
    size_t i = 0;
    auto added = [&](const WalkedKeyspace::Item& it) {
      d.added++;
      listing.Add("+ " + name + " " + PrintableKey(w.key(it)));
    };
    while (scan.valid() && scan.id() == id) {
      const std::string_view key = scan.key();
      w.PrefetchAhead(i);
      d.in_snapshot++;
      progress->Add(1);
      while (i < w.items.size() && w.key(w.items[i]) < key) added(w.items[i++]);
      if (i < w.items.size() && w.key(w.items[i]) == key) {
        const sf::EntryValue& s = scan.entry();
        const sf::EntryValue& p = w.items[i].entry;
        if (s.sequence != p.sequence || s.crc != p.crc) {
          d.changed++;
          listing.Add("~ " + name + " " + PrintableKey(key) + " (sequence " +
                      std::to_string(s.sequence) + " -> " +
                      std::to_string(p.sequence) + ")");
        } else if (s.log_offset != p.log_offset) {
          d.relocated++;
        }
        i++;
      } else {
        d.removed++;
        listing.Add("- " + name + " " + PrintableKey(key));
      }
      scan.Next();
    }
    while (i < w.items.size()) added(w.items[i++]);
    diffs.emplace_back(name, d);
  }
  progress.reset();  // clears its line
  // Nothing is reported before the snapshot proved intact.
  Status st = scan.Finish();
  if (st.ok()) st = orphan;
  if (!st.ok()) return Fail(err, st);

  listing.Print(os);
  uint64_t total = 0;
  for (const auto& [name, d] : diffs) {
    os << "keyspace " << name << ": " << d.in_snapshot << " in the snapshot, "
       << d.in_pool << " in the pool: " << d.added << " added, " << d.removed
       << " removed, " << d.changed << " changed";
    if (d.relocated > 0) {
      os << " (" << d.relocated
         << " moved by the cleaner, same sequence and CRC)";
    }
    if (d.catalog_changed) os << "; catalog entry differs";
    os << "\n";
    total += d.total();
  }
  if (total == 0) {
    os << "identical: the pool matches snapshot " << dir << "\n";
    return kExitOk;
  }
  os << "DIFFERENT: " << total << " differences from snapshot " << dir << "\n";
  return kExitCheckFailed;
}

}  // namespace kv::kvadmin
