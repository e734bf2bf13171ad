// Keyspace: recovery, grants, lock-free lookup and iteration, stats.
// Commit is in keyspace_commit.cc, the cleaner in keyspace_clean.cc.
#include "kv/store/keyspace.h"

#include <cstring>
#include <string>

#include "commit_log.h"
#include "index.h"
#include "index_slots.h"
#include "kv/index_format.h"
#include "kv/server_clock.h"
#include "kv/store/commit_pipeline.h"
#include "segment_table.h"

namespace kv::store {
namespace {

namespace ix = kv::index_format;
namespace rf = kv::record_format;
namespace il = kv::index_lookup;

constexpr int kGetAttempts = 16;

}  // namespace

Keyspace::Keyspace(const pool_format::CatalogEntry& e, Mapping* mapping,
                   bool read_only, std::chrono::milliseconds grace_period)
    : name_(e.name, strnlen(e.name, sizeof(e.name))),
      id_(e.keyspace_id),
      log_(mapping->base() + e.log_offset),
      log_size_(e.log_size),
      segment_size_(e.segment_size),
      max_value_size_(e.max_value_size),
      entry_(e),
      mapping_(mapping),
      persister_(mapping->persister()),
      read_only_(read_only),
      segments_(std::make_unique<SegmentTable>(
          static_cast<uint32_t>(e.log_size / e.segment_size), e.segment_size,
          grace_period)),
      index_(std::make_unique<Index>(
          mapping->base() + e.region_offset, mapping->base() + e.index_offset,
          e.bucket_count, e.index_generation, mapping->persister())),
      pipeline_(std::make_unique<CommitPipeline>(this)) {
  if (e.commit_log_entries != 0) {
    commit_log_ = std::make_unique<CommitLog>(
        mapping->base() + e.commit_log_offset, e.commit_log_entries,
        mapping->base() + e.region_offset + commit_log::kCheckpointOffset,
        e.keyspace_id, mapping->persister());
  }
}

Keyspace::~Keyspace() = default;

KeyspaceInfo Keyspace::info() const {
  KeyspaceInfo i;
  i.name = name_;
  i.id = id_;
  i.region_offset = entry_.region_offset;
  i.region_size = entry_.region_size;
  i.index_offset = entry_.index_offset;
  i.bucket_count = index_->bucket_count();
  i.log_offset = entry_.log_offset;
  i.log_size = log_size_;
  i.segment_size = segment_size_;
  i.max_value_size = max_value_size_;
  i.commit_log_offset = entry_.commit_log_offset;
  i.commit_log_entries = entry_.commit_log_entries;
  return i;
}

std::mutex& Keyspace::StripeFor(uint64_t hash) const {
  return index_->StripeFor(hash);
}

void Keyspace::Recover(uint64_t open_epoch, bool unclean,
                       std::vector<std::string>* notes) {
  // Sequences of this open start above every earlier open's.
  next_sequence_.store((open_epoch << kEpochShift) + 1);
  durable_epoch_.store(open_epoch);
  unclean_ = unclean;
  growths_.store(index_->geometry().generation - 1);
  if (!read_only_) index_->PublishHeader();  // the catalog is authoritative
  // Pool::Load checked the checkpoint (CheckpointProblem).
  if (commit_log_ != nullptr) (void)commit_log_->Load();
  if (unclean && !read_only_) {
    RepairAfterCrash(notes);
    if (commit_log_ != nullptr) ReplayCommitLog(notes);
    unclean_ = false;
  } else if (unclean && commit_log_ != nullptr) {
    replay_pending_ = PlanReplay().items.size();
    if (replay_pending_ != 0) {
      notes->push_back("keyspace '" + name_ + "': its commit log holds " +
                       std::to_string(replay_pending_) +
                       " commits the index does not; a writable open "
                       "replays them (reads refuse until then)");
    }
  }
  // On a cache-line mapping a bucket's persist is one line, as cheap as an
  // entry's, and a checkpoint would flush the whole index line by line.
  entries_on_ = commit_log_ != nullptr && !read_only_ &&
                mapping_->granularity() != "cache line";
  const uint32_t under_index = SegmentsUnderIndex(index_->bucket_count());
  int64_t keys = 0;
  index_->ForEachSlot([&](uint64_t, uint64_t v) {
    // Check() reports bad slots (also one into the index's segments).
    if (!SlotInBounds(v)) return true;
    const auto seg =
        static_cast<uint32_t>(ix::SlotLogOffset(v) / segment_size_);
    if (seg < under_index) return true;
    segments_->RecoverLive(seg, ix::SlotRecordBytes(v));
    keys++;
    return true;
  });
  keys_.store(keys);
  segments_->FinishRecovery(under_index);
}

Status Keyspace::EnsureDurableEpoch(uint64_t epoch) {
  if (epoch <= durable_epoch_.load(std::memory_order_acquire)) {
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(epoch_mu_);
  if (epoch > durable_epoch_.load()) {
    // Rare (every 2^40 sequences, or a replica's record from a higher
    // epoch): a catalog persist. Until it succeeds no sequence of the new
    // epoch is handed out: the next open could otherwise hand it out again.
    if (epoch_sink_) {
      Status st = epoch_sink_(epoch);
      if (!st.ok()) {
        return Status(st.code(), "persisting the keyspace's sequence epoch " +
                                     std::to_string(epoch) + ": " +
                                     st.message());
      }
    }
    durable_epoch_.store(epoch, std::memory_order_release);
  }
  return Status::Ok();
}

Result<uint64_t> Keyspace::NextSequence() {
  const uint64_t s = next_sequence_.fetch_add(1);
  KV_RETURN_IF_ERROR(EnsureDurableEpoch(s >> kEpochShift));
  return s;
}

Status Keyspace::AdvanceSequencePast(uint64_t sequence) {
  if (sequence > kMaxSequence) {
    return Status::InvalidArgument("sequence " + std::to_string(sequence) +
                                   " is above the highest a keyspace uses (" +
                                   std::to_string(kMaxSequence) + ")");
  }
  KV_RETURN_IF_ERROR(EnsureDurableEpoch(sequence >> kEpochShift));
  uint64_t next = next_sequence_.load();
  while (next <= sequence &&
         !next_sequence_.compare_exchange_weak(next, sequence + 1)) {
  }
  return Status::Ok();
}

void Keyspace::PersistIndex() {
  if (read_only_) return;
  Index::Reading reading(*index_);
  if (commit_log_ != nullptr) {
    Checkpoint();  // nothing left for a recovery to read
  } else {
    index_->PersistAll();
  }
}

void Keyspace::Checkpoint() {
  commit_log_->Checkpoint([this] { index_->PersistAll(); });
}

void Keyspace::MaybeCheckpoint() {
  if (entries_on_ && commit_log_->HalfFull()) Checkpoint();
}

Persister::Range Keyspace::AppendEntry(uint64_t slot, uint64_t sequence,
                                       bool tombstone) {
  return commit_log_->Append(slot, sequence, tombstone,
                             [this] { Checkpoint(); });
}

Status Keyspace::ReadableOrWhy() const {
  if (replay_pending_ == 0) return Status::Ok();
  return Status::Unavailable(
      "keyspace '" + name_ +
      "' was not closed cleanly and its commit log "
      "holds " +
      std::to_string(replay_pending_) +
      " commits its index does not: open the pool writable once (kvserver "
      "does at start) to replay them");
}

Result<SegmentGrant> Keyspace::GrantZeroed(GrantPurpose purpose) {
  Result<SegmentGrant> g = segments_->Grant(purpose);
  if (!g.ok()) return g;
  g->keyspace_id = id_;
  // An update clears its key's old slot without persisting it. Before the
  // segment that slot pointed into can be rewritten, the clear must be
  // durable, or a crash could revive the slot over a new record. With a
  // commit log, no entry a recovery reads may point into it either (a
  // tombstone's among them): a checkpoint does both.
  if (entries_on_) {
    Checkpoint();
  } else {
    index_->PersistClears();
  }
  // Zero [start, size) durably: a half-written record must not be able to
  // pass for an older record left at the same offset. Whole pages are
  // zeroed through the mapping (a hole on a file), the partial first page
  // by storing zeros.
  constexpr uint64_t kPage = 4096;
  const uint64_t seg_abs =
      static_cast<uint64_t>(log_ - mapping_->base()) + g->log_offset;
  uint64_t begin = g->start;
  const uint64_t page_end = (begin + kPage - 1) / kPage * kPage;
  if (begin < page_end && page_end <= g->size) {
    std::memset(log_ + g->log_offset + begin, 0, page_end - begin);
    persister_->Persist(log_ + g->log_offset + begin, page_end - begin);
    begin = page_end;
  }
  if (begin < g->size) {
    Status st = mapping_->Zero(seg_abs + begin, g->size - begin);
    if (!st.ok()) {
      (void)segments_->Return(g->segment, g->grant_id);
      return st;
    }
  }
  return g;
}

Result<SegmentGrant> Keyspace::GrantSegment(bool for_delete) {
  if (read_only_) return Status::PermissionDenied("pool opened read-only");
  return GrantZeroed(for_delete ? GrantPurpose::kDelete : GrantPurpose::kWrite);
}

void Keyspace::PreferSegmentForTesting(uint32_t segment) {
  segments_->PreferForTesting(segment);
}

Status Keyspace::SealSegment(const SegmentGrant& grant) {
  return segments_->Seal(grant.segment, grant.grant_id);
}

Status Keyspace::ReturnSegment(const SegmentGrant& grant) {
  return segments_->Return(grant.segment, grant.grant_id);
}

Status Keyspace::Get(std::string_view key, std::string* value,
                     Version* version) const {
  if (key.size() < rf::kMinKeySize || key.size() > rf::kMaxKeySize) {
    return Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                   std::to_string(key.size()));
  }
  KV_RETURN_IF_ERROR(ReadableOrWhy());
  const uint64_t hash = ix::HashKey(key);
  std::string bad;
  bool settled = false;
  for (int attempt = 0; attempt < kGetAttempts; attempt++) {
    // The fence (kv/index_format.h): the geometry read first, and checked
    // again before concluding the key is absent.
    const Index::Geometry geo = index_->geometry();
    const uint64_t home = ix::HomeBucket(hash, geo.bucket_count);
    const uint64_t* live = index_->Bucket(home);
    if (read_hook_) read_hook_();
    // The same algorithm a remote client runs over its copy of the
    // neighbourhood (kv/index_lookup.h); here the records are read in
    // place, so a slot that changed meanwhile means start over.
    uint64_t neigh[il::kNeighbourhoodSlots];
    for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
      neigh[i] = LoadSlot(&live[i]);
    }
    const il::Choice c = il::ChooseNewest(
        neigh, geometry(geo.bucket_count), key, hash,
        [&](size_t, uint64_t slot) {
          return static_cast<const uint8_t*>(log_ + ix::SlotLogOffset(slot));
        });
    if (c.found()) {
      // The newest version decides: when it has expired the key is
      // absent (an older version, if a slot still holds one, is older
      // still and never taken instead).
      const bool expired = rf::Expired(c.view, NowMs());
      if (!expired) value->assign(c.view.value.data(), c.view.value.size());
      // The slot unchanged across the copy means the record stayed live
      // (hence immutable) throughout; otherwise start over.
      if (LoadSlot(&live[c.pos]) != c.slot) continue;
      if (expired) return Status::NotFound("key not found");
      if (version != nullptr) {
        *version = {c.view.header.sequence, ix::SlotLogOffset(c.slot),
                    static_cast<uint32_t>(ix::SlotRecordBytes(c.slot)),
                    c.view.expiry};
      }
      return Status::Ok();
    }
    // Nothing found in a copy taken while slots changed may be a torn view
    // of an update (new slot not yet seen, old one already cleared).
    bool changed = false;
    for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
      changed |= LoadSlot(&live[i]) != neigh[i];
    }
    if (changed || !index_->Unchanged(geo)) continue;
    if (c.bad_pos >= 0) {
      bad = "keyspace '" + name_ + "' " +
            SlotName(home * ix::kSlotsPerBucket + c.bad_pos) + " (log offset " +
            std::to_string(ix::SlotLogOffset(neigh[c.bad_pos])) +
            "): " + c.bad_why;
    }
    settled = true;
    break;
  }
  if (!bad.empty()) return Status::Corruption(bad);
  if (!settled) {
    return Status::Busy("keyspace '" + name_ +
                        "': the key's index slots kept "
                        "changing during " +
                        std::to_string(kGetAttempts) + " attempts; retry");
  }
  return Status::NotFound("key not found");
}

Status Keyspace::ForEach(
    const std::function<bool(const rf::RecordView&)>& fn) const {
  KV_RETURN_IF_ERROR(ReadableOrWhy());
  // Shared: a growth would move slots behind the walk. fn must not
  // commit to this keyspace (a nested shared lock could deadlock).
  Index::Reading reading(*index_);
  Status result;
  const uint64_t now = NowMs();
  index_->ForEachSlot([&](uint64_t i, uint64_t v) {
    if (!SlotInBounds(v)) {
      result = Status::Corruption("keyspace '" + name_ + "' " + SlotName(i) +
                                  " points outside the log");
      return false;
    }
    rf::RecordView view;
    Status st = rf::VerifyRecord(log_ + ix::SlotLogOffset(v),
                                 ix::SlotRecordBytes(v), id_, &view);
    if (!st.ok() || view.tombstone()) {
      if (LoadSlot(index_->Slot(i)) != v) return true;  // changed under us
      result =
          Status::Corruption("keyspace '" + name_ + "' " + SlotName(i) + ": " +
                             (st.ok() ? "tombstone" : st.message()));
      return false;
    }
    if (rf::Expired(view, now)) return true;
    return fn(view);
  });
  return result;
}

uint64_t Keyspace::NowMs() const { return clock_ ? clock_() : UnixMillisNow(); }

Keyspace::Region Keyspace::region() const {
  Region r;
  r.base = mapping_->base() + entry_.region_offset;
  r.size = entry_.region_size;
  r.index_offset = entry_.index_offset - entry_.region_offset;
  r.index_size = Index::BytesFor(index_->bucket_count());
  r.log_offset = entry_.log_offset - entry_.region_offset;
  r.log_size = log_size_;
  return r;
}

std::string Keyspace::granularity() const { return mapping_->granularity(); }

KeyspaceStats Keyspace::Stats() const {
  KeyspaceStats st;
  segments_->FillStats(&st);
  const int64_t k = keys_.load();
  st.keys = k > 0 ? static_cast<uint64_t>(k) : 0;
  st.log_bytes = log_size_;
  st.log_bytes_used =
      static_cast<uint64_t>(st.segments - st.free_segments) * segment_size_;
  const Index::Geometry geo = index_->geometry();
  st.index_slots = ix::PhysicalBuckets(geo.bucket_count) * ix::kSlotsPerBucket;
  st.index_slots_used = st.keys;
  st.index_buckets = geo.bucket_count;
  st.index_generation = geo.generation;
  st.index_growths = growths_.load();
  return st;
}

}  // namespace kv::store
