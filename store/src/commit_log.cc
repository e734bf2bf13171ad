#include "commit_log.h"

#include <cstring>

#include "kv/crc32c.h"

namespace kv::store {
namespace commit_log {
namespace {
uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// Ring and checkpoint bytes are stored as 8-byte words, as slots are:
// a persist of a neighbouring entry (its cache line) may read them
// meanwhile (the test persister does, with atomic loads).
void StoreWords(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w;
    std::memcpy(&w, src + i, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(dst + i), w, __ATOMIC_RELAXED);
  }
}
uint32_t EntryCrc(const uint8_t* bytes, uint32_t id) {
  return Crc32cExtend(Crc32c(bytes, 28), &id, sizeof(id));
}
}  // namespace

void EncodeEntry(const Entry& e, uint32_t id, uint8_t out[kEntrySize]) {
  std::memcpy(out, &e.lsn, 8);
  std::memcpy(out + 8, &e.slot, 8);
  std::memcpy(out + 16, &e.sequence, 8);
  std::memcpy(out + 24, &e.flags, 4);
  const uint32_t crc = EntryCrc(out, id);
  std::memcpy(out + 28, &crc, 4);
}

bool DecodeEntry(const uint8_t in[kEntrySize], uint32_t id, Entry* out) {
  if (Load32(in + 28) != EntryCrc(in, id)) return false;
  out->lsn = Load64(in);
  out->slot = Load64(in + 8);
  out->sequence = Load64(in + 16);
  out->flags = Load32(in + 24);
  return (out->flags & ~kTombstone) == 0;
}

void EncodeCheckpoint(const Checkpoint& c, uint8_t out[kCheckpointCopySize]) {
  std::memcpy(out, &c.generation, 8);
  std::memcpy(out + 8, &c.start, 8);
  std::memcpy(out + 16, &c.entries, 8);
  std::memcpy(out + 24, &kCheckpointMagic, 4);
  const uint32_t crc = Crc32c(out, 28);
  std::memcpy(out + 28, &crc, 4);
}

bool DecodeCheckpoint(const uint8_t in[kCheckpointCopySize], Checkpoint* out) {
  if (Load32(in + 24) != kCheckpointMagic || Load32(in + 28) != Crc32c(in, 28))
    return false;
  out->generation = Load64(in);
  out->start = Load64(in + 8);
  out->entries = Load64(in + 16);
  return true;
}

bool ReadCheckpoint(const uint8_t* copies, uint64_t entries, Checkpoint* out) {
  if (!CheckpointProblem(copies, entries).empty()) return false;
  Checkpoint c[2];
  const bool ok0 = DecodeCheckpoint(copies, &c[0]);
  const bool ok1 = DecodeCheckpoint(copies + kCheckpointCopySize, &c[1]);
  *out = ok0 && (!ok1 || c[0].generation > c[1].generation) ? c[0] : c[1];
  return true;
}

std::string CheckpointProblem(const uint8_t* copies, uint64_t entries) {
  Checkpoint c[2];
  int intact = 0;
  for (int i = 0; i < 2; i++) {
    if (!DecodeCheckpoint(copies + i * kCheckpointCopySize, &c[i])) continue;
    if (c[i].entries != entries) {
      return "its commit log checkpoint names " + std::to_string(c[i].entries) +
             " entries, the catalog " + std::to_string(entries);
    }
    // A start this high would wrap the ring's lsn arithmetic.
    if (c[i].start > (uint64_t{1} << 62)) {
      return "its commit log checkpoint starts at lsn " +
             std::to_string(c[i].start) + ", above 2^62";
    }
    intact++;
  }
  if (intact == 0) {
    return "its commit log checkpoint is damaged (neither copy is intact)";
  }
  return "";
}
}  // namespace commit_log

namespace cl = commit_log;

CommitLog::CommitLog(uint8_t* ring, uint64_t entries, uint8_t* checkpoint,
                     uint32_t id, Persister* persister)
    : ring_(ring),
      entries_(entries),
      checkpoint_(checkpoint),
      id_(id),
      persister_(persister) {}

void CommitLog::Format(uint8_t* checkpoint, uint64_t entries,
                       Persister* persister) {
  for (uint64_t i = 0; i < 2; i++) {
    uint8_t bytes[cl::kCheckpointCopySize];
    cl::EncodeCheckpoint({i + 1, 0, entries}, bytes);
    std::memcpy(checkpoint + i * cl::kCheckpointCopySize, bytes, sizeof(bytes));
  }
  persister->Persist(checkpoint, 2 * cl::kCheckpointCopySize);
}

bool CommitLog::Load() {
  cl::Checkpoint c;
  if (!cl::ReadCheckpoint(checkpoint_, entries_, &c)) return false;
  // Never nested: Checkpoint takes checkpoint_mu_, then mu_.
  {
    std::lock_guard<std::mutex> ck(checkpoint_mu_);
    generation_ = c.generation;
  }
  std::lock_guard<std::mutex> lock(mu_);
  start_ = next_ = c.start;
  return true;
}

uint64_t CommitLog::start() const {
  std::lock_guard<std::mutex> lock(mu_);
  return start_;
}

uint64_t CommitLog::next() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

bool CommitLog::HalfFull() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_ - start_ >= entries_ / 2;
}

void CommitLog::ForEachPending(
    const std::function<void(const cl::Entry&)>& fn) const {
  const uint64_t start = this->start();
  for (uint64_t pos = 0; pos < entries_; pos++) {
    cl::Entry e;
    if (!cl::DecodeEntry(ring_ + pos * cl::kEntrySize, id_, &e)) continue;
    // Overflow-safe: lsn in [start, start + entries), at its own position.
    if (e.lsn < start || e.lsn - start >= entries_) continue;
    if (e.lsn % entries_ != pos) continue;
    fn(e);
  }
}

Persister::Range CommitLog::Append(uint64_t slot, uint64_t sequence,
                                   bool tombstone,
                                   const std::function<void()>& checkpoint) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t lsn = next_++;
  // Full: the entry at this position is still read by a recovery.
  while (lsn >= start_ && lsn - start_ >= entries_) {
    lock.unlock();
    checkpoint();
    lock.lock();
  }
  // A checkpoint read `next` after this lsn was taken: it persisted the
  // index with this commit's slot change, and no recovery reads the
  // entry. (Written anyway, it could overwrite a later lap's entry.)
  if (lsn < start_) return {nullptr, 0};
  uint8_t* at = ring_ + (lsn % entries_) * cl::kEntrySize;
  uint8_t bytes[cl::kEntrySize];
  cl::EncodeEntry({lsn, slot, sequence, tombstone ? cl::kTombstone : 0u}, id_,
                  bytes);
  cl::StoreWords(at, bytes, sizeof(bytes));
  return {at, cl::kEntrySize};
}

void CommitLog::WriteCheckpoint(uint64_t start) {
  // Caller holds checkpoint_mu_. The copy that is not current.
  generation_++;
  uint8_t* at = checkpoint_ + (generation_ % 2) * cl::kCheckpointCopySize;
  uint8_t bytes[cl::kCheckpointCopySize];
  cl::EncodeCheckpoint({generation_, start, entries_}, bytes);
  cl::StoreWords(at, bytes, sizeof(bytes));
  persister_->Persist(at, sizeof(bytes));
}

void CommitLog::Checkpoint(const std::function<void()>& persist_index) {
  std::lock_guard<std::mutex> one(checkpoint_mu_);
  uint64_t covered = 0;
  {
    // Every lsn below it belongs to a commit whose slot change was stored
    // before the lsn was taken.
    std::lock_guard<std::mutex> lock(mu_);
    covered = next_;
  }
  // Always: a grant needs the clears an update deferred durable, also
  // when no entry was written since the last checkpoint.
  persist_index();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (covered == start_) return;  // nothing past the last one
  }
  WriteCheckpoint(covered);
  std::lock_guard<std::mutex> lock(mu_);
  if (covered > start_) start_ = covered;
}

void CommitLog::Reset(uint64_t next,
                      const std::function<void()>& persist_index) {
  std::lock_guard<std::mutex> one(checkpoint_mu_);
  persist_index();
  WriteCheckpoint(next);
  std::lock_guard<std::mutex> lock(mu_);
  start_ = next_ = next;
}

}  // namespace kv::store
