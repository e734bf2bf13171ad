// Pool: create/open (recovery), lookup, check, info. Keyspace create and
// drop are in pool_keyspaces.cc.

#include "kv/store/pool.h"

#include <algorithm>
#include <cstring>

#include "catalog.h"
#include "commit_log.h"
#include "kv/index_format.h"
#include "kv/keyspace_name.h"
#include "kv/store/pmem_file_mapping.h"
#include "kv/store/restore_journal.h"
#include "superblock.h"

namespace kv::store {
namespace pf = pool_format;

namespace {
constexpr auto kLive = static_cast<uint32_t>(pf::KeyspaceState::kLive);

std::string EntryName(const pf::CatalogEntry& e) {
  return std::string(e.name, strnlen(e.name, sizeof(e.name)));
}
}  // namespace

Pool::Pool(std::unique_ptr<Mapping> m, const PoolOptions& options)
    : mapping_(std::move(m)), options_(options), slots_(pf::kCatalogSlots) {}

Pool::~Pool() {
  // Clean close: each keyspace's index is made durable, then its entry
  // records that this open closed cleanly, so the next open need not
  // repair (Keyspace::Recover). Keyspaces must no longer be in use.
  if (!options_.read_only) {
    for (uint32_t i = 0; i < slots_.size(); i++) {
      if (slots_[i].copy < 0 || slots_[i].entry.state != kLive) continue;
      auto it = keyspaces_.find(EntryName(slots_[i].entry));
      if (it == keyspaces_.end()) continue;
      it->second->PersistIndex();
      pf::CatalogEntry e = slots_[i].entry;
      e.clean_epoch = e.open_epoch;
      (void)WriteEntry(i, e);
    }
  }
  keyspaces_.clear();
}

Result<std::unique_ptr<Pool>> Pool::Create(const std::string& path,
                                           uint64_t size,
                                           const PoolOptions& options) {
  if (size < pf::kMinPoolSize || size > pf::kMaxPoolSize ||
      size % pf::kRegionAlign != 0) {
    return Status::InvalidArgument(
        "pool size " + std::to_string(size) +
        " must be a multiple of 4096 between 1 MiB and 1 PiB");
  }
  Result<std::unique_ptr<PmemFileMapping>> m =
      PmemFileMapping::Create(path, size);
  if (!m.ok()) return m.status();
  return CreateOn(std::move(m.value()), options);
}

Result<std::unique_ptr<Pool>> Pool::Open(const std::string& path,
                                         const PoolOptions& options) {
  Result<std::unique_ptr<PmemFileMapping>> m =
      PmemFileMapping::Open(path, options.read_only, options.live_view);
  if (!m.ok()) return m.status();
  const std::string held_by = (*m)->held_by();
  // An interrupted kvadmin restore is undone before anything reads the
  // pool (not under a live view: its holder is running, no restore is).
  std::string note;
  if (held_by.empty()) {
    KV_RETURN_IF_ERROR(
        RollBackRestore(m->get(), PoolFileRestoreJournal(path).get(), &note));
  }
  Result<std::unique_ptr<Pool>> pool = OpenOn(std::move(m.value()), options);
  if (pool.ok() && !note.empty()) (*pool)->notes_.push_back(note);
  if (pool.ok()) (*pool)->live_view_of_ = held_by;
  return pool;
}

Result<std::unique_ptr<Pool>> Pool::CreateOn(std::unique_ptr<Mapping> m,
                                             const PoolOptions& options) {
  if (m->read_only()) return Status::PermissionDenied("mapping is read-only");
  if (m->size() < pf::kMinPoolSize) {
    return Status::InvalidArgument("pool of " + std::to_string(m->size()) +
                                   " bytes is below the 1 MiB minimum");
  }
  // The catalog must read as empty before a superblock makes it a pool.
  const uint64_t catalog_bytes =
      uint64_t{pf::kCatalogSlots} * 2 * pf::kCatalogEntrySize;
  std::memset(m->base() + pf::kCatalogOffset, 0, catalog_bytes);
  m->persister()->Persist(m->base() + pf::kCatalogOffset, catalog_bytes);
  KV_RETURN_IF_ERROR(FormatSuperblocks(m.get()));
  return OpenOn(std::move(m), options);
}

Result<std::unique_ptr<Pool>> Pool::OpenOn(std::unique_ptr<Mapping> m,
                                           const PoolOptions& options) {
  PoolOptions o = options;
  o.read_only = options.read_only || m->read_only();
  std::unique_ptr<Pool> pool(new Pool(std::move(m), o));
  KV_RETURN_IF_ERROR(pool->Load());
  return pool;
}

Status Pool::Load() {
  KV_RETURN_IF_ERROR(LoadSuperblock(mapping_.get(), &sb_, &notes_));
  const uint8_t* base = mapping_->base();
  std::vector<uint32_t> live;
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
    slots_[i].copy = ReadCatalogSlot(base, i, &slots_[i].entry);
    if (slots_[i].copy < 0) continue;
    const pf::CatalogEntry& e = slots_[i].entry;
    std::string why = ValidateEntryGeometry(e, sb_.pool_size);
    if (why.empty() && e.state == kLive && e.commit_log_entries != 0) {
      why = commit_log::CheckpointProblem(
          base + e.region_offset + commit_log::kCheckpointOffset,
          e.commit_log_entries);
    }
    if (!why.empty()) {
      return Status::Corruption("catalog slot " + std::to_string(i) +
                                " (keyspace '" + EntryName(e).substr(0, 63) +
                                "'): " + why);
    }
    if (e.state == kLive) live.push_back(i);
  }
  // Live regions must not overlap, names must be unique.
  for (size_t a = 0; a < live.size(); a++) {
    for (size_t b = a + 1; b < live.size(); b++) {
      const pf::CatalogEntry& x = slots_[live[a]].entry;
      const pf::CatalogEntry& y = slots_[live[b]].entry;
      if (x.region_offset < y.region_offset + y.region_size &&
          y.region_offset < x.region_offset + x.region_size) {
        return Status::Corruption("catalog: keyspaces '" + EntryName(x) +
                                  "' and '" + EntryName(y) +
                                  "' have overlapping regions");
      }
      if (EntryName(x) == EntryName(y)) {
        return Status::Corruption("catalog: keyspace name '" + EntryName(x) +
                                  "' appears twice");
      }
    }
  }
  for (uint32_t i : live) {
    pf::CatalogEntry e = slots_[i].entry;
    const bool unclean = e.clean_epoch != e.open_epoch;
    if (!options_.read_only) {
      // A new epoch per writable open keeps sequences increasing across
      // restarts without persisting a counter on every commit.
      e.open_epoch++;
      KV_RETURN_IF_ERROR(WriteEntry(i, e));
    }
    auto ks =
        std::make_shared<Keyspace>(slots_[i].entry, mapping_.get(),
                                   options_.read_only, options_.grace_period);
    ks->Recover(slots_[i].entry.open_epoch, unclean, &notes_);
    if (unclean) unclean_.push_back(ks->name());
    if (!options_.read_only) AttachEpochSink(ks.get(), i);
    keyspaces_[ks->name()] = std::move(ks);
  }
  return Status::Ok();
}

void Pool::AttachEpochSink(Keyspace* ks, uint32_t slot) {
  const uint32_t id = ks->id();
  ks->SetEpochSink([this, slot, id](uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mu_);
    pf::CatalogEntry e = slots_[slot].entry;
    if (e.state != kLive || e.keyspace_id != id) return Status::Ok();
    if (e.open_epoch >= epoch) return Status::Ok();
    e.open_epoch = epoch;  // clean_epoch stays below: still open
    return WriteEntry(slot, e);
  });
  // An index growth's commit point: the entry names the doubled index.
  ks->SetGrowthSink(
      [this, slot, id](uint64_t bucket_count, uint64_t generation) {
        std::lock_guard<std::mutex> lock(mu_);
        pf::CatalogEntry e = slots_[slot].entry;
        if (e.state != kLive || e.keyspace_id != id) {
          return Status::Unavailable("the keyspace was dropped");
        }
        e.bucket_count = bucket_count;
        e.index_generation = generation;
        return WriteEntry(slot, e);
      });
}

Status Pool::WriteEntry(uint32_t slot, pf::CatalogEntry entry) {
  Slot& s = slots_[slot];
  s.copy = WriteCatalogCopy(mapping_.get(), slot, s.copy, s.entry.generation,
                            &entry);
  s.entry = entry;
  return Status::Ok();
}

Result<std::shared_ptr<Keyspace>> Pool::GetKeyspace(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keyspaces_.find(name);
  if (it == keyspaces_.end()) {
    return Status::NotFound("no keyspace '" + std::string(name) + "'");
  }
  return it->second;
}

std::vector<KeyspaceInfo> Pool::ListKeyspaces() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<KeyspaceInfo> out;
  for (const auto& [name, ks] : keyspaces_) out.push_back(ks->info());
  return out;
}

CheckReport Pool::Check() {
  CheckReport r;
  for (int c = 0; c < 2; c++) {
    pf::Superblock sb;
    std::memcpy(&sb, mapping_->base() + pf::kSuperblockOffset[c], sizeof(sb));
    const std::string why = ValidateSuperblock(sb, mapping_->size());
    if (!why.empty()) {
      r.problems.push_back(std::string("superblock copy ") + "AB"[c] + ": " +
                           why);
    }
  }
  std::vector<std::shared_ptr<Keyspace>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, ks] : keyspaces_) all.push_back(ks);
  }
  for (const auto& ks : all) ks->Check(&r);
  return r;
}

PoolInfo Pool::Info() {
  std::lock_guard<std::mutex> lock(mu_);
  PoolInfo i;
  i.uuid = UuidString(sb_.uuid);
  i.size = sb_.pool_size;
  i.format_version = sb_.format_version;
  i.created_unix_seconds = sb_.created_unix_seconds;
  i.granularity = mapping_->granularity();
  i.live_view_of = live_view_of_;
  i.unclean_keyspaces = unclean_;
  i.keyspaces = static_cast<uint32_t>(keyspaces_.size());
  uint64_t used = 0;
  for (const Slot& s : slots_) {
    if (s.copy >= 0 && s.entry.state == kLive) used += s.entry.region_size;
  }
  i.free_bytes = sb_.pool_size - sb_.data_offset - used;
  Allocate(0, &i.largest_free);
  i.recovery_notes = notes_;
  return i;
}

}  // namespace kv::store
