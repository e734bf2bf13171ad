// PoolRestore: plan the catalog, re-link verified records, commit through
// the restore journal.
//
// Crash-consistency order in Commit: journal durable → index slots stored
// and persisted → catalog entries persisted → journal removed (the commit
// point). Before the removal, any open rolls the pool back from the
// journal; after it, the pool is restored.
#include "kv/store/pool_restore.h"

#include <algorithm>
#include <cstring>

#include "catalog.h"
#include "commit_log.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/record_format.h"
#include "kv/store/keyspace.h"
#include "kv/store/pmem_file_mapping.h"
#include "restore_journal_codec.h"
#include "superblock.h"

namespace kv::store {
namespace pf = pool_format;
namespace ix = kv::index_format;
namespace rf = kv::record_format;

namespace {
constexpr auto kLive = static_cast<uint32_t>(pf::KeyspaceState::kLive);

std::string EntryName(const pf::CatalogEntry& e) {
  return std::string(e.name, strnlen(e.name, sizeof(e.name)));
}

bool SameGeometry(const pf::CatalogEntry& a, const pf::CatalogEntry& b) {
  return a.keyspace_id == b.keyspace_id && EntryName(a) == EntryName(b) &&
         a.region_offset == b.region_offset && a.region_size == b.region_size &&
         a.index_offset == b.index_offset && a.bucket_count == b.bucket_count &&
         a.log_offset == b.log_offset && a.log_size == b.log_size &&
         a.segment_size == b.segment_size &&
         a.max_value_size == b.max_value_size;
}

bool Overlap(const pf::CatalogEntry& a, const pf::CatalogEntry& b) {
  return a.region_offset < b.region_offset + b.region_size &&
         b.region_offset < a.region_offset + a.region_size;
}
}  // namespace

struct PoolRestore::Planned {
  pf::CatalogEntry entry{};  // the entry to write (state live)
  uint32_t slot = 0;         // catalog slot it goes to
  int current_copy = -1;     // of that slot now
  uint64_t current_generation = 0;
  std::vector<std::pair<uint64_t, uint64_t>> slots;  // (index, new value)
  uint64_t max_sequence = 0;
  // A commit log fits between the log's end and the region's end (where
  // the snapshot's keyspace had it): its entries, given after the commit
  // point (GiveCommitLogs); 0 when none fits.
  uint64_t ring_entries = 0;
};

namespace {

// Entries of the commit log that fits after e's log in its region: whole
// pages, at most commit_log::kMaxEntries; 0 under kMinEntries.
// ValidateEntryGeometry held for e (the log lies inside the region).
uint64_t RingEntriesThatFit(const pf::CatalogEntry& e) {
  const uint64_t at = e.log_offset + e.log_size;
  if (at % pf::kRegionAlign != 0) return 0;
  const uint64_t gap = std::min<uint64_t>(
      e.region_offset + e.region_size - at,
      uint64_t{commit_log::kMaxEntries} * commit_log::kEntrySize);
  const uint64_t n =
      gap / pf::kRegionAlign * pf::kRegionAlign / commit_log::kEntrySize;
  return n >= commit_log::kMinEntries ? n : 0;
}

}  // namespace

PoolRestore::PoolRestore(std::unique_ptr<Mapping> m,
                         std::unique_ptr<RestoreJournal> j)
    : mapping_(std::move(m)), journal_(std::move(j)) {}
PoolRestore::~PoolRestore() = default;

Result<std::unique_ptr<PoolRestore>> PoolRestore::Open(
    const std::string& path) {
  Result<std::unique_ptr<PmemFileMapping>> m =
      PmemFileMapping::Open(path, false);
  if (!m.ok()) return m.status();
  return OpenOn(std::move(m.value()), PoolFileRestoreJournal(path));
}

Result<std::unique_ptr<PoolRestore>> PoolRestore::OpenOn(
    std::unique_ptr<Mapping> m, std::unique_ptr<RestoreJournal> journal) {
  if (m->read_only()) return Status::PermissionDenied("mapping is read-only");
  std::unique_ptr<PoolRestore> r(
      new PoolRestore(std::move(m), std::move(journal)));
  std::string note;
  KV_RETURN_IF_ERROR(
      RollBackRestore(r->mapping_.get(), r->journal_.get(), &note));
  if (!note.empty()) r->notes_.push_back(note);
  KV_RETURN_IF_ERROR(r->LoadSuperblock());
  return r;
}

Status PoolRestore::LoadSuperblock() {
  // Read only: a damaged copy is repaired by the next Pool::Open, not here
  // (a refused restore must change nothing).
  std::string why;
  for (int c = 0; c < 2; c++) {
    pf::Superblock sb;
    std::memcpy(&sb, mapping_->base() + pf::kSuperblockOffset[c], sizeof(sb));
    const std::string w = ValidateSuperblock(sb, mapping_->size());
    if (w.empty()) {
      std::memcpy(uuid_, sb.uuid, 16);
      pool_size_ = sb.pool_size;
      return Status::Ok();
    }
    why += std::string(c == 0 ? "" : "; ") + "copy " + "AB"[c] + ": " + w;
  }
  return Status::Corruption("superblock: " + why +
                            " (restore needs one valid superblock copy)");
}

std::string PoolRestore::uuid() const { return UuidString(uuid_); }
uint64_t PoolRestore::pool_size() const { return pool_size_; }

PoolRestore::Planned* PoolRestore::Find(uint32_t keyspace_id) {
  for (Planned& p : planned_) {
    if (p.entry.keyspace_id == keyspace_id) return &p;
  }
  return nullptr;
}

Status PoolRestore::PlanCatalog(const std::vector<RestoreKeyspace>& ks) {
  planned_.clear();
  kept_.clear();
  struct Current {
    int copy = -1;
    pf::CatalogEntry entry{};
    bool live() const { return copy >= 0 && entry.state == kLive; }
  };
  std::vector<Current> cur(pf::kCatalogSlots);
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
    cur[i].copy = ReadCatalogSlot(mapping_->base(), i, &cur[i].entry);
  }
  for (const RestoreKeyspace& k : ks) {
    Planned p;
    pf::CatalogEntry& e = p.entry;
    e.state = kLive;
    e.keyspace_id = k.id;
    if (k.name.size() >= sizeof(e.name)) {
      return Status::InvalidArgument("snapshot keyspace name too long");
    }
    std::memcpy(e.name, k.name.data(), k.name.size());
    e.region_offset = k.region_offset;
    e.region_size = k.region_size;
    e.index_offset = k.region_offset + ix::kIndexHeaderBytes;
    e.bucket_count = k.bucket_count;
    e.index_generation = 1;  // the open publishes the header
    e.log_offset = k.log_offset;
    e.log_size = k.log_size;
    e.segment_size = k.segment_size;
    e.max_value_size = k.max_value_size;
    const std::string why = ValidateEntryGeometry(e, pool_size_);
    if (!why.empty()) {
      return Status::InvalidArgument("snapshot keyspace '" + k.name +
                                     "' does not fit this pool: " + why);
    }
    p.ring_entries = RingEntriesThatFit(e);
    for (const Planned& q : planned_) {
      if (Overlap(q.entry, e) || q.entry.keyspace_id == e.keyspace_id ||
          EntryName(q.entry) == k.name) {
        return Status::InvalidArgument("snapshot keyspaces '" +
                                       EntryName(q.entry) + "' and '" + k.name +
                                       "' share a name, an id or a region");
      }
    }
    p.slot = pf::kCatalogSlots;
    for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
      if (cur[i].live() && SameGeometry(cur[i].entry, e)) p.slot = i;
    }
    if (p.slot < pf::kCatalogSlots) {
      e.open_epoch = cur[p.slot].entry.open_epoch;
    }
    planned_.push_back(p);
  }
  // Live keyspaces the snapshot does not hold stay, unless they collide.
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
    if (!cur[i].live()) continue;
    bool matched = false;
    for (const Planned& p : planned_) matched |= p.slot == i;
    if (matched) continue;
    const pf::CatalogEntry& c = cur[i].entry;
    for (const Planned& p : planned_) {
      if (Overlap(p.entry, c) || p.entry.keyspace_id == c.keyspace_id ||
          EntryName(p.entry) == EntryName(c)) {
        return Status::InvalidArgument(
            "keyspace '" + EntryName(c) + "' (id " +
            std::to_string(c.keyspace_id) +
            "), which the snapshot does not hold, uses the name, id or region "
            "of the snapshot's keyspace '" +
            EntryName(p.entry) +
            "'; drop it first (kvadmin keyspace drop) to restore");
      }
    }
    kept_.push_back(EntryName(c));
  }
  // Unmatched snapshot keyspaces go to slots that are not live.
  std::vector<bool> taken(pf::kCatalogSlots);
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) taken[i] = cur[i].live();
  for (Planned& p : planned_) {
    for (uint32_t i = 0; i < pf::kCatalogSlots && p.slot >= pf::kCatalogSlots;
         i++) {
      if (!taken[i]) p.slot = i;
    }
    if (p.slot >= pf::kCatalogSlots) {
      return Status::NoSpace("no free catalog slot for keyspace '" +
                             EntryName(p.entry) + "'");
    }
    taken[p.slot] = true;
  }
  for (Planned& p : planned_) {
    p.current_copy = cur[p.slot].copy;
    p.current_generation = cur[p.slot].entry.generation;
  }
  planned_catalog_ = true;
  return Status::Ok();
}

std::string PoolRestore::Relink(uint32_t keyspace_id, const RestoreEntry& e) {
  Planned* p = Find(keyspace_id);
  if (p == nullptr)
    return "keyspace id " + std::to_string(keyspace_id) +
           " is not in the snapshot's catalog";
  const pf::CatalogEntry& c = p->entry;
  if (e.tombstone) return "a tombstone (a delete has no slot)";
  if (e.length == 0 || e.length % ix::kUnit != 0 ||
      e.length / ix::kUnit > ix::kMaxRecordUnits ||
      e.log_offset % ix::kUnit != 0 || e.log_offset > c.log_size ||
      e.length > c.log_size - e.log_offset ||
      e.log_offset / c.segment_size !=
          (e.log_offset + e.length - 1) / c.segment_size) {
    return "location " + std::to_string(e.log_offset) + "+" +
           std::to_string(e.length) + " is not a record extent of the log";
  }
  const uint64_t hash = ix::HashKey(e.key);
  const uint64_t home = ix::HomeBucket(hash, c.bucket_count);
  const uint64_t bucket = e.slot / ix::kSlotsPerBucket;
  if (bucket < home || bucket >= home + ix::kProbeBuckets) {
    return SlotName(e.slot) + " is outside the key's buckets";
  }
  rf::RecordView view;
  const Status st =
      rf::VerifyRecord(mapping_->base() + c.log_offset + e.log_offset, e.length,
                       c.keyspace_id, &view);
  if (!st.ok()) {
    return "the log at offset " + std::to_string(e.log_offset) +
           " no longer holds it (" + st.message() + ")";
  }
  if (view.key != e.key) {
    return "the log at offset " + std::to_string(e.log_offset) +
           " holds another key now";
  }
  if (view.header.sequence != e.sequence || view.header.crc != e.crc) {
    return "the log at offset " + std::to_string(e.log_offset) +
           " holds another version (sequence " +
           std::to_string(view.header.sequence) + ", snapshot " +
           std::to_string(e.sequence) + ")";
  }
  if (view.tombstone()) return "the log holds a tombstone there";
  if (rf::RecordSizeOf(view) != e.length) {
    return "its length does not match the record in the log";
  }
  const uint64_t value = ix::PackSlot(
      {ix::Fingerprint(hash), static_cast<uint16_t>(e.length / ix::kUnit),
       static_cast<uint32_t>(e.log_offset / ix::kUnit)});
  p->slots.emplace_back(e.slot, value);
  p->max_sequence = std::max(p->max_sequence, e.sequence);
  return "";
}

Result<RestoreReport> PoolRestore::Commit() {
  if (!planned_catalog_) {
    return Status::InvalidArgument("PlanCatalog must come before Commit");
  }
  RestoreReport report;
  report.kept = kept_;
  uint8_t* base = mapping_->base();
  RestoreJournalContents journal;
  std::memcpy(journal.uuid, uuid_, 16);
  journal.pool_size = pool_size_;
  journal.catalog.assign(
      reinterpret_cast<const char*>(base + pf::kCatalogOffset),
      uint64_t{pf::kCatalogSlots} * 2 * pf::kCatalogEntrySize);
  // Every slot of every restored index that changes, with its old value.
  struct Change {
    uint64_t* slot;
    uint64_t value;
  };
  std::vector<Change> changes;
  for (Planned& p : planned_) {
    std::sort(p.slots.begin(), p.slots.end());
    for (size_t i = 1; i < p.slots.size(); i++) {
      if (p.slots[i].first == p.slots[i - 1].first) {
        return Status::Corruption("snapshot: two entries of keyspace '" +
                                  EntryName(p.entry) + "' claim " +
                                  SlotName(p.slots[i].first));
      }
    }
    auto* index = reinterpret_cast<uint64_t*>(base + p.entry.index_offset);
    const uint64_t n =
        ix::PhysicalBuckets(p.entry.bucket_count) * ix::kSlotsPerBucket;
    size_t next = 0;
    for (uint64_t i = 0; i < n; i++) {
      uint64_t want = 0;
      if (next < p.slots.size() && p.slots[next].first == i) {
        want = p.slots[next++].second;
      }
      const uint64_t have = LoadSlot(&index[i]);
      if (have == want) continue;
      changes.push_back({&index[i], want});
      journal.slots.push_back(
          {static_cast<uint64_t>(reinterpret_cast<uint8_t*>(&index[i]) - base),
           have});
    }
    report.relinked += p.slots.size();
    // Sequences of the next open must lie above every re-linked one.
    p.entry.open_epoch = std::max<uint64_t>(
        {p.entry.open_epoch, p.max_sequence >> Keyspace::kEpochShift, 1});
    p.entry.clean_epoch = p.entry.open_epoch;  // index fully persisted
  }
  KV_RETURN_IF_ERROR(journal_->Write(EncodeRestoreJournal(journal)));
  for (const Change& c : changes) {
    __atomic_store_n(c.slot, c.value, __ATOMIC_RELEASE);
  }
  for (const Planned& p : planned_) {
    mapping_->persister()->Persist(
        base + p.entry.index_offset,
        ix::PhysicalBuckets(p.entry.bucket_count) * ix::kBucketSize);
  }
  for (Planned& p : planned_) {
    p.current_copy = WriteCatalogCopy(mapping_.get(), p.slot, p.current_copy,
                                      p.current_generation, &p.entry);
    p.current_generation = p.entry.generation;
  }
  KV_RETURN_IF_ERROR(journal_->Remove());  // the commit point
  report.keyspaces = static_cast<uint32_t>(planned_.size());
  report.catalog_written = report.keyspaces;
  report.slots_changed = changes.size();
  GiveCommitLogs(&report);
  return report;
}

void PoolRestore::GiveCommitLogs(RestoreReport* report) {
  // Each restored keyspace is clean (its index persisted, clean_epoch set)
  // and has no commit log in the catalog yet: a zeroed ring and a fresh
  // checkpoint, durable, then the catalog entry that names them. A crash
  // before that entry leaves the keyspace as restored, without one (the
  // ring's bytes are not read); after it, with one that holds nothing.
  uint8_t* base = mapping_->base();
  for (Planned& p : planned_) {
    const uint64_t at = p.entry.log_offset + p.entry.log_size;
    if (p.ring_entries == 0 ||
        !mapping_->Zero(at, p.ring_entries * commit_log::kEntrySize).ok()) {
      report->without_commit_log.push_back(EntryName(p.entry));
      continue;
    }
    CommitLog::Format(
        base + p.entry.region_offset + commit_log::kCheckpointOffset,
        p.ring_entries, mapping_->persister());
    p.entry.commit_log_offset = at;
    p.entry.commit_log_entries = p.ring_entries;
    p.current_copy = WriteCatalogCopy(mapping_.get(), p.slot, p.current_copy,
                                      p.current_generation, &p.entry);
    p.current_generation = p.entry.generation;
  }
}

}  // namespace kv::store
