#include "kv/store/writer.h"

#include <string>

#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv::store {
namespace rf = kv::record_format;

Writer::Writer(std::shared_ptr<Keyspace> keyspace,
               CommitPipeline::Gather gather)
    : ks_(std::move(keyspace)), gather_(gather) {}

Writer::~Writer() { (void)Close(); }

Status Writer::Close() {
  CommitStagedInto(&early_);  // before the segment goes
  if (!have_grant_) return Status::Ok();
  have_grant_ = false;
  return ks_->ReturnSegment(grant_);
}

void Writer::CommitStagedInto(std::vector<Result<CommitResult>>* results) {
  if (staged_.empty()) return;
  ks_->pipeline().Commit(staged_.data(), staged_.size(), results, gather_);
  staged_.clear();
}

void Writer::CommitStaged(std::vector<Result<CommitResult>>* results) {
  for (auto& r : early_) results->push_back(std::move(r));
  early_.clear();
  CommitStagedInto(results);
}

Status Writer::EnsureRoom(uint64_t bytes, bool tombstone) {
  if (have_grant_ && grant_.start + bytes <= grant_.size) return Status::Ok();
  if (have_grant_) {
    CommitStagedInto(&early_);  // durable before the seal
    have_grant_ = false;
    KV_RETURN_IF_ERROR(ks_->SealSegment(grant_));
  }
  // A full log is no_space here: when to run the cleaner is the caller's
  // policy (kvserver's background cleaner, a tool's explicit Clean).
  Result<SegmentGrant> g = ks_->GrantSegment(tombstone);
  if (!g.ok()) return g.status();
  grant_ = *g;
  have_grant_ = true;
  if (grant_.start + bytes > grant_.size) {
    // A returned segment with too little room: seal it and take another.
    return EnsureRoom(bytes, tombstone);
  }
  return Status::Ok();
}

Status Writer::Stage(std::string_view key, std::string_view value,
                     bool tombstone, Condition condition, uint64_t expected,
                     int64_t ttl_ms) {
  if (key.size() < rf::kMinKeySize || key.size() > rf::kMaxKeySize) {
    return Status::InvalidArgument("key must be 1..1024 bytes, got " +
                                   std::to_string(key.size()));
  }
  if (value.size() > ks_->max_value_size()) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes exceeds the keyspace limit of " +
                                   std::to_string(ks_->max_value_size()));
  }
  const uint64_t size = rf::RecordSize(key.size(), value.size(), ttl_ms != 0);
  KV_RETURN_IF_ERROR(EnsureRoom(size, tombstone));
  uint8_t* dst = ks_->log_base() + grant_.log_offset + grant_.start;
  // Sequence 0: the commit assigns the sequence. No persist here: the
  // commit point persists the record together with its slot.
  rf::EncodeRecord(dst, ks_->id(), 0, tombstone, key, value,
                   static_cast<uint64_t>(ttl_ms));
  CommitRequest req;
  req.segment = grant_.segment;
  req.grant_id = grant_.grant_id;
  req.offset = grant_.start;
  req.length = static_cast<uint32_t>(size);
  req.key_hash = index_format::HashKey(key);
  req.condition = condition;
  req.expected_sequence = expected;
  grant_.start += size;
  staged_.push_back(req);
  return Status::Ok();
}

Status Writer::StagePut(std::string_view key, std::string_view value,
                        Condition condition, uint64_t expected) {
  return Stage(key, value, false, condition, expected);
}

Status Writer::StageDelete(std::string_view key, Condition condition,
                           uint64_t expected) {
  return Stage(key, {}, true, condition, expected);
}

Result<CommitResult> Writer::Put(std::string_view key, std::string_view value,
                                 Condition condition, uint64_t expected) {
  CommitStagedInto(&early_);  // claims go in offset order
  KV_RETURN_IF_ERROR(Stage(key, value, false, condition, expected));
  std::vector<Result<CommitResult>> out;
  CommitStagedInto(&out);
  return std::move(out.back());
}

Result<CommitResult> Writer::PutExpiring(std::string_view key,
                                         std::string_view value, int64_t ttl_ms,
                                         Condition condition,
                                         uint64_t expected) {
  KV_RETURN_IF_ERROR(rf::CheckTtl(ttl_ms));
  CommitStagedInto(&early_);
  KV_RETURN_IF_ERROR(Stage(key, value, false, condition, expected, ttl_ms));
  std::vector<Result<CommitResult>> out;
  CommitStagedInto(&out);
  return std::move(out.back());
}

Result<CommitResult> Writer::Delete(std::string_view key, Condition condition,
                                    uint64_t expected) {
  CommitStagedInto(&early_);
  KV_RETURN_IF_ERROR(Stage(key, {}, true, condition, expected));
  std::vector<Result<CommitResult>> out;
  CommitStagedInto(&out);
  return std::move(out.back());
}

}  // namespace kv::store
