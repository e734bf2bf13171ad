// Pool: keyspace create and drop, and the first-fit region allocator.
//
// Crash-consistency of catalog changes: CreateKeyspace zeroes the new
// keyspace's index durably first, then persists the catalog entry (the
// commit point); DropKeyspace persists an entry in state "dropped". A crash
// before the entry's persist leaves the previous copy current, so the
// region is simply free again.
#include <algorithm>
#include <cstring>

#include "catalog.h"
#include "commit_log.h"
#include "kv/index_format.h"
#include "kv/keyspace_name.h"
#include "kv/store/pool.h"

namespace kv::store {
namespace pf = pool_format;

namespace {
constexpr auto kLive = static_cast<uint32_t>(pf::KeyspaceState::kLive);
constexpr auto kDropped = static_cast<uint32_t>(pf::KeyspaceState::kDropped);

std::string EntryName(const pf::CatalogEntry& e) {
  return std::string(e.name, strnlen(e.name, sizeof(e.name)));
}
}  // namespace

uint64_t Pool::Allocate(uint64_t size, uint64_t* largest_free) {
  std::vector<std::pair<uint64_t, uint64_t>> used;
  for (const Slot& s : slots_) {
    if (s.copy >= 0 && s.entry.state == kLive) {
      used.emplace_back(s.entry.region_offset,
                        s.entry.region_offset + s.entry.region_size);
    }
  }
  std::sort(used.begin(), used.end());
  uint64_t found = 0;
  uint64_t largest = 0;
  uint64_t cursor = sb_.data_offset;
  used.emplace_back(sb_.pool_size / pf::kRegionAlign * pf::kRegionAlign, 0);
  for (const auto& [begin, end] : used) {
    if (begin > cursor) {
      const uint64_t gap = begin - cursor;
      largest = std::max(largest, gap);
      if (found == 0 && size != 0 && gap >= size) found = cursor;
    }
    cursor = std::max(cursor, end);
  }
  if (largest_free != nullptr) *largest_free = largest;
  return found;
}

Result<std::shared_ptr<Keyspace>> Pool::CreateKeyspace(
    std::string_view name, const KeyspaceOptions& o) {
  if (options_.read_only) {
    return Status::PermissionDenied("pool opened read-only");
  }
  KV_RETURN_IF_ERROR(ValidateKeyspaceName(name));
  if (o.index_capacity == 0 || o.index_capacity > (1ull << 34)) {
    return Status::InvalidArgument("index capacity must be 1..2^34 keys");
  }
  if (o.segment_size < 4096 || o.segment_size % 4096 != 0 ||
      o.segment_size > (1u << 30)) {
    return Status::InvalidArgument(
        "segment size must be a multiple of 4096 between 4 KiB and 1 GiB");
  }
  if (o.max_value_size > record_format::kMaxValueSize ||
      record_format::RecordSize(record_format::kMaxKeySize, o.max_value_size,
                                /*expires=*/true) > o.segment_size) {
    return Status::InvalidArgument(
        "max value size " + std::to_string(o.max_value_size) +
        " does not fit a " + std::to_string(o.segment_size) +
        "-byte segment with a 1024-byte key (limit " +
        std::to_string(record_format::kMaxValueSize) + ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (keyspaces_.count(name) != 0) {
    return Status::InvalidArgument("keyspace '" + std::string(name) +
                                   "' already exists");
  }
  int64_t slot = -1;
  uint32_t max_id = 0;
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
    if (slots_[i].copy >= 0)
      max_id = std::max(max_id, slots_[i].entry.keyspace_id);
    // A dropped keyspace's id may be taken again: its region is zeroed
    // (index) or zeroed at each grant (log) before anything reads it.
    if (o.id != 0 && slots_[i].copy >= 0 && slots_[i].entry.state == kLive &&
        slots_[i].entry.keyspace_id == o.id) {
      return Status::InvalidArgument(
          "keyspace id " + std::to_string(o.id) + " is taken by '" +
          std::string(
              slots_[i].entry.name,
              strnlen(slots_[i].entry.name, sizeof(slots_[i].entry.name))) +
          "' in this pool");
    }
    if (slot < 0 && (slots_[i].copy < 0 || slots_[i].entry.state != kLive)) {
      slot = i;
    }
  }
  if (o.id == 0 && max_id == UINT32_MAX) {
    return Status::NoSpace("keyspace ids used up: create with an explicit id");
  }
  if (slot < 0) {
    return Status::NoSpace("catalog full: a pool holds at most " +
                           std::to_string(pf::kCatalogSlots) + " keyspaces");
  }
  const uint64_t buckets = BucketCountFor(o.index_capacity);
  // The index header page, then the initial index.
  const uint64_t index_bytes = IndexRegionBytes(o.index_capacity);
  uint64_t log_size = o.log_size / o.segment_size * o.segment_size;
  uint64_t largest = 0;
  Allocate(0, &largest);
  if (o.log_size == 0) {
    // The commit log's share at its largest for this extent.
    const uint64_t before_log =
        index_bytes + (o.commit_log ? CommitLogBytes(largest) : 0);
    log_size = largest > before_log
                   ? (largest - before_log) / o.segment_size * o.segment_size
                   : 0;
    const uint64_t max_log = index_format::kMaxLogUnits * index_format::kUnit /
                             o.segment_size * o.segment_size;
    log_size = std::min(log_size, max_log);
  } else if (log_size / index_format::kUnit > index_format::kMaxLogUnits) {
    return Status::InvalidArgument("log size above the 256 GiB limit");
  }
  if (log_size < kMinSegments * o.segment_size) {
    return Status::NoSpace(
        "keyspace '" + std::string(name) + "' needs at least " +
        std::to_string(kMinSegments) + " " + std::to_string(o.segment_size) +
        "-byte segments plus a " + std::to_string(index_bytes) +
        "-byte index; largest free extent is " + std::to_string(largest) +
        " bytes");
  }
  const uint64_t ring_bytes = o.commit_log ? CommitLogBytes(log_size) : 0;
  const uint64_t region_size = index_bytes + log_size + ring_bytes;
  const uint64_t region = Allocate(region_size, nullptr);
  if (region == 0) {
    return Status::NoSpace("keyspace '" + std::string(name) + "' needs " +
                           std::to_string(region_size) +
                           " bytes; largest free extent is " +
                           std::to_string(largest));
  }
  // Header page and index zeroed and durable before the entry that makes
  // them reachable (Keyspace::Recover writes the header).
  // Indexes up to 64 MiB get their blocks allocated (written zeros), so a
  // put's commit persist never waits for an index block allocation; larger
  // ones stay sparse (a hole), keeping creation cheap.
  constexpr uint64_t kAllocateIndexUpTo = 64ull << 20;
  KV_RETURN_IF_ERROR(index_bytes <= kAllocateIndexUpTo
                         ? mapping_->ZeroAllocated(region, index_bytes)
                         : mapping_->Zero(region, index_bytes));
  // A ring of zeros holds no entry (each carries a CRC); its checkpoint
  // starts at lsn 0.
  if (ring_bytes != 0) {
    KV_RETURN_IF_ERROR(
        mapping_->ZeroAllocated(region + index_bytes + log_size, ring_bytes));
    CommitLog::Format(mapping_->base() + region + commit_log::kCheckpointOffset,
                      ring_bytes / commit_log::kEntrySize,
                      mapping_->persister());
  }

  pf::CatalogEntry e{};
  e.state = kLive;
  e.keyspace_id = o.id != 0 ? o.id : max_id + 1;
  std::memcpy(e.name, name.data(), name.size());
  e.region_offset = region;
  e.region_size = region_size;
  e.index_offset = region + index_format::kIndexHeaderBytes;
  e.bucket_count = buckets;
  e.index_generation = 1;
  e.log_offset = region + index_bytes;
  e.log_size = log_size;
  e.segment_size = o.segment_size;
  e.max_value_size = o.max_value_size;
  e.open_epoch = 1;
  if (ring_bytes != 0) {
    e.commit_log_offset = e.log_offset + log_size;
    e.commit_log_entries = ring_bytes / commit_log::kEntrySize;
  }
  KV_RETURN_IF_ERROR(WriteEntry(static_cast<uint32_t>(slot), e));
  auto ks = std::make_shared<Keyspace>(slots_[slot].entry, mapping_.get(),
                                       false, options_.grace_period);
  ks->Recover(e.open_epoch, false, &notes_);
  AttachEpochSink(ks.get(), static_cast<uint32_t>(slot));
  keyspaces_[ks->name()] = ks;
  return ks;
}

Status Pool::DropKeyspace(std::string_view name) {
  if (options_.read_only) {
    return Status::PermissionDenied("pool opened read-only");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keyspaces_.find(name);
  if (it == keyspaces_.end()) {
    return Status::NotFound("no keyspace '" + std::string(name) + "'");
  }
  if (it->second.use_count() > 1) {
    return Status::Busy("keyspace '" + std::string(name) +
                        "' is in use; release its handles first");
  }
  for (uint32_t i = 0; i < pf::kCatalogSlots; i++) {
    Slot& s = slots_[i];
    if (s.copy >= 0 && s.entry.state == kLive && EntryName(s.entry) == name) {
      pf::CatalogEntry e = s.entry;
      e.state = kDropped;
      KV_RETURN_IF_ERROR(WriteEntry(i, e));
      break;
    }
  }
  keyspaces_.erase(it);
  return Status::Ok();
}

}  // namespace kv::store
