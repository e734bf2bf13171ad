#include "segment_table.h"

#include <algorithm>
#include <string>

namespace kv::store {

SegmentTable::SegmentTable(uint32_t count, uint32_t segment_size,
                           std::chrono::milliseconds grace_period)
    : count_(count),
      segment_size_(segment_size),
      grace_(grace_period),
      segs_(count) {}

void SegmentTable::RecoverLive(uint32_t segment, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  segs_[segment].live += bytes;
}

void SegmentTable::FinishRecovery(uint32_t under_index) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.clear();
  under_index_ = std::min(under_index, count_);
  for (uint32_t i = 0; i < count_; i++) {
    Seg& s = segs_[i];
    if (i < under_index_) {
      s = Seg{};
      s.state = State::kIndex;
      continue;
    }
    // A segment that was open at the crash is sealed as if full: where its
    // writer stopped is unknown and its tail bytes may hold garbage.
    if (s.live > 0) {
      s.state = State::kSealed;
      s.tail = segment_size_;
    } else {
      s.state = State::kFree;
      s.tail = 0;
      free_.push_back(i);
    }
  }
}

void SegmentTable::ReleaseExpiredLocked() {
  const auto now = Clock::now();
  while (!quarantine_.empty() && segs_[quarantine_.front()].free_at <= now) {
    const uint32_t i = quarantine_.front();
    quarantine_.pop_front();
    segs_[i] = Seg{};
    free_.push_back(i);
  }
}

uint32_t SegmentTable::TakeFreeLocked() {
  auto it = std::find(free_.begin(), free_.end(), prefer_);
  prefer_ = UINT32_MAX;
  // Highest first: the index grows over the log's first segments.
  if (it == free_.end()) it = std::max_element(free_.begin(), free_.end());
  const uint32_t i = *it;
  free_.erase(it);
  return i;
}

Status SegmentTable::RetireFront(uint32_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseExpiredLocked();
  if (n <= under_index_) return Status::Ok();
  if (n > count_) {
    return Status::NoSpace("keyspace log full: the index would need " +
                           std::to_string(n) + " of its " +
                           std::to_string(count_) + " segments");
  }
  uint32_t busy = 0;
  uint32_t free_among = 0;
  for (uint32_t i = under_index_; i < n; i++) {
    busy +=
        segs_[i].state != State::kFree && segs_[i].state != State::kQuarantine
            ? 1
            : 0;
    free_among += segs_[i].state == State::kFree ? 1 : 0;
  }
  if (busy > 0 ||
      free_.size() < free_among + kCleanerReserve + kDeleteReserve) {
    return Status::NoSpace(
        "keyspace log full: the index needs segments " +
        std::to_string(under_index_) + ".." + std::to_string(n - 1) +
        " to grow (" + std::to_string(busy) + " in use, " +
        std::to_string(free_.size()) +
        " free in all); delete keys (the cleaner wins their room back) or "
        "use a larger pool");
  }
  for (uint32_t i = under_index_; i < n; i++) {
    auto& list = segs_[i].state == State::kFree ? free_ : quarantine_;
    list.erase(std::find(list.begin(), list.end(), i));
    segs_[i] = Seg{};
    segs_[i].state = State::kIndex;
  }
  under_index_ = n;
  return Status::Ok();
}

void SegmentTable::UnretireFrom(uint32_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t i = n; i < under_index_; i++) {
    segs_[i] = Seg{};
    free_.push_back(i);
  }
  under_index_ = std::min(under_index_, n);
}

Result<SegmentGrant> SegmentTable::Grant(Purpose purpose) {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseExpiredLocked();
  size_t keep = 0;  // free segments this purpose must leave
  switch (purpose) {
    case Purpose::kWrite:
      keep = kCleanerReserve + kDeleteReserve;
      break;
    case Purpose::kDelete:
      keep = kCleanerReserve;
      break;
    case Purpose::kCleaner:
      keep = 0;
      break;
  }
  uint32_t i;
  if (!returned_.empty()) {
    i = returned_.front();
    returned_.pop_front();
  } else if (free_.size() > keep) {
    i = TakeFreeLocked();
  } else {
    return Status::NoSpace(
        "keyspace log full: no free segment (" + std::to_string(count_) +
        " segments, " + std::to_string(quarantine_.size()) +
        " waiting out the grace period); delete keys (the cleaner wins "
        "their room back) or use a larger pool");
  }
  Seg& s = segs_[i];
  s.state = State::kOpen;
  s.grant_id = next_grant_id_++;
  SegmentGrant g;
  g.segment = i;
  g.grant_id = s.grant_id;
  g.log_offset = uint64_t{i} * segment_size_;
  g.start = s.tail;
  g.size = segment_size_;
  return g;
}

Status SegmentTable::CheckGrantLocked(uint32_t segment,
                                      uint64_t grant_id) const {
  if (segment >= count_) {
    return Status::InvalidArgument("segment " + std::to_string(segment) +
                                   " does not exist");
  }
  const Seg& s = segs_[segment];
  if (s.state != State::kOpen || s.grant_id != grant_id) {
    return Status::InvalidArgument("segment " + std::to_string(segment) +
                                   " is not granted under grant id " +
                                   std::to_string(grant_id));
  }
  return Status::Ok();
}

Status SegmentTable::ClaimAppend(uint32_t segment, uint64_t grant_id,
                                 uint64_t offset, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  KV_RETURN_IF_ERROR(CheckGrantLocked(segment, grant_id));
  Seg& s = segs_[segment];
  if (offset < s.tail) {
    return Status::InvalidArgument(
        "record at segment offset " + std::to_string(offset) +
        " is before the append tail " + std::to_string(s.tail));
  }
  // Overflow-safe: offset and length are a peer's numbers (a COMMIT's
  // offset is a u64 off the wire; `offset + length` could wrap).
  if (length == 0 || length > segment_size_ ||
      offset > segment_size_ - length) {
    return Status::InvalidArgument(
        "record [" + std::to_string(offset) + ", +" + std::to_string(length) +
        ") exceeds the " + std::to_string(segment_size_) + "-byte segment");
  }
  s.tail = offset + length;
  return Status::Ok();
}

void SegmentTable::MaybeQuarantineLocked(uint32_t segment) {
  Seg& s = segs_[segment];
  if (s.state == State::kSealed && s.live == 0) {
    s.state = State::kQuarantine;
    s.free_at = Clock::now() + grace_;
    quarantine_.push_back(segment);
  }
}

Status SegmentTable::Seal(uint32_t segment, uint64_t grant_id) {
  std::lock_guard<std::mutex> lock(mu_);
  KV_RETURN_IF_ERROR(CheckGrantLocked(segment, grant_id));
  segs_[segment].state = State::kSealed;
  MaybeQuarantineLocked(segment);
  return Status::Ok();
}

Status SegmentTable::Return(uint32_t segment, uint64_t grant_id) {
  std::lock_guard<std::mutex> lock(mu_);
  KV_RETURN_IF_ERROR(CheckGrantLocked(segment, grant_id));
  Seg& s = segs_[segment];
  if (s.tail == 0) {
    s = Seg{};
    free_.push_back(segment);
  } else if (s.tail + index_format::kUnit * 4 > segment_size_) {
    s.state = State::kSealed;  // too little left to be worth granting
    MaybeQuarantineLocked(segment);
  } else {
    s.state = State::kReturned;
    returned_.push_back(segment);
  }
  return Status::Ok();
}

void SegmentTable::AddLive(uint32_t segment, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  segs_[segment].live += bytes;
}

void SegmentTable::RemoveLive(uint32_t segment, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  Seg& s = segs_[segment];
  s.live = s.live >= bytes ? s.live - bytes : 0;
  MaybeQuarantineLocked(segment);
}

std::vector<uint32_t> SegmentTable::PickVictims(double max_live_ratio,
                                                size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < count_; i++) {
    const Seg& s = segs_[i];
    if (s.state == State::kSealed &&
        static_cast<double>(s.live) <= max_live_ratio * segment_size_) {
      v.push_back(i);
    }
  }
  std::sort(v.begin(), v.end(), [this](uint32_t a, uint32_t b) {
    return segs_[a].live < segs_[b].live;
  });
  if (v.size() > max) v.resize(max);
  for (uint32_t i : v) segs_[i].state = State::kCleaning;
  return v;
}

std::vector<uint32_t> SegmentTable::PickFront(uint32_t end) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint32_t> v;
  for (uint32_t i = under_index_; i < std::min(end, count_); i++) {
    if (segs_[i].state == State::kSealed) {
      segs_[i].state = State::kCleaning;
      v.push_back(i);
    }
  }
  return v;
}

void SegmentTable::FinishCleaning(uint32_t segment) {
  std::lock_guard<std::mutex> lock(mu_);
  segs_[segment].state = State::kSealed;
  MaybeQuarantineLocked(segment);
}

void SegmentTable::FillStats(KeyspaceStats* st) {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseExpiredLocked();
  st->segments = count_;
  st->live_bytes = 0;
  st->dead_bytes = 0;
  st->free_segments = st->open_segments = st->sealed_segments =
      st->quarantined_segments = 0;
  for (const Seg& s : segs_) {
    st->live_bytes += s.live;
    switch (s.state) {
      case State::kFree:
        st->free_segments++;
        break;
      case State::kOpen:
      case State::kReturned:
        st->open_segments++;
        break;
      case State::kSealed:
      case State::kCleaning:
        st->sealed_segments++;
        break;
      case State::kQuarantine:
        st->quarantined_segments++;
        break;
      case State::kIndex:
        break;  // counted as used: the log's room the index took
    }
    // Dead: what the cleaner can win back. In a sealed segment that is
    // everything not live — its unused rest too (a writer that vanished
    // after one put leaves a segment with one record: counting only the
    // bytes before its tail, the cleaner never saw such segments).
    const uint64_t used =
        s.state == State::kSealed || s.state == State::kCleaning ? segment_size_
                                                                 : s.tail;
    if (s.state != State::kFree && s.state != State::kQuarantine &&
        s.state != State::kIndex) {
      st->dead_bytes += used > s.live ? used - s.live : 0;
    }
  }
}

}  // namespace kv::store
