#include "semfuzz_model.h"

#include <cstring>

#include "kv/index_format.h"

namespace kv::semfuzz {

namespace rf = record_format;
namespace ix = index_format;

void GrantModel::Reset(const protocol::Grant& g, uint32_t segment_size) {
  held = g.size != 0;
  grant = g;
  tail = g.start;
  // The writable part of a grant is durably zero (Keyspace::GrantSegment);
  // bytes before `start` are not this grant's and never legitimately read.
  shadow.assign(segment_size, 0);
}

Prediction Model::Predict(const GrantModel& g,
                          const protocol::Commit& c) const {
  Prediction p;
  if (!g.held || c.segment != g.grant.segment ||
      c.grant_id != g.grant.grant_id) {
    p.why = "not this connection's grant";
    return p;
  }
  const uint64_t size = g.grant.size;
  if (c.offset % ix::kUnit != 0 || c.length % ix::kUnit != 0 || c.length == 0 ||
      c.length / ix::kUnit > ix::kMaxRecordUnits) {
    p.why = "offset/length not non-zero multiples of 64";
    return p;
  }
  if (c.offset < g.tail) {
    p.why = "before the append tail " + std::to_string(g.tail);
    return p;
  }
  if (c.length > size || c.offset > size - c.length) {
    p.why = "[offset, offset + length) leaves the segment";
    return p;
  }
  p.advances_tail = true;
  rf::RecordView v;
  Status st = rf::VerifyRecord(g.shadow.data() + c.offset, c.length,
                               keyspace_id, &v, rf::SequenceRule::kUnsealed);
  if (!st.ok()) {
    p.why = "record does not verify: " + st.message();
    return p;
  }
  if (rf::RecordSizeOf(v) != c.length) {
    p.why = "length is not the record's size";
    return p;
  }
  if (v.header.key_hash != c.key_hash) {
    p.why = "key hash does not match";
    return p;
  }
  if (v.tombstone() && !v.value.empty()) {
    p.why = "tombstone with a value";
    return p;
  }
  // The op and the delete reserve's rule are checked on the verified
  // record, after the claim (Keyspace::PrepareCommit).
  if (v.tombstone() != (c.op == 1)) {
    p.why = "op does not match the record's tombstone flag";
    return p;
  }
  if (g.reserve() && !v.tombstone()) {
    p.why = "a put into the delete reserve";
    return p;
  }
  if (v.value.size() > max_value_size) {
    p.why = "value over the keyspace limit";
    return p;
  }
  auto it = keys.find(std::string(v.key));
  const bool exists = it != keys.end() && it->second.present;
  if (c.condition == 1 && exists) {
    p.condition_failed = true;
    p.why = "if-absent but the key exists";
    return p;
  }
  if (c.condition == 2 &&
      (!exists || it->second.sequence != c.expected_sequence)) {
    p.condition_failed = true;
    p.why = "if-version does not hold";
    return p;
  }
  p.ok = true;
  p.view = v;
  return p;
}

std::string Model::Apply(GrantModel* g, const protocol::Commit& c,
                         const Prediction& p, const protocol::CommitAck& ack) {
  const std::string key(p.view.key);
  KeyState& k = keys[key];
  const uint64_t log_offset = uint64_t{c.segment} * segment_size + c.offset;
  if (ack.length != c.length) return "ack length differs from the record's";
  if (ack.log_offset != log_offset) return "ack log offset is not the record's";
  if (ack.sequence <= last_sequence) {
    return "ack sequence " + std::to_string(ack.sequence) +
           " not above the last one " + std::to_string(last_sequence);
  }
  if (((ack.flags & protocol::kAckHadPrevious) != 0) != k.present) {
    return "ack's had-previous flag is wrong for key '" + key + "'";
  }
  if (k.present && ack.previous_sequence != k.sequence) {
    return "ack's previous sequence is not the key's acknowledged one";
  }
  last_sequence = ack.sequence;
  // The runner writes no expiring record (a time to live would be
  // stamped with the server's clock, which the model does not see).
  rf::SealRecord(g->shadow.data() + c.offset, p.view, ack.sequence,
                 /*now_ms=*/0);
  if (p.view.tombstone()) {
    k = KeyState{};
  } else {
    k.present = true;
    k.value = std::string(p.view.value);
    k.sequence = ack.sequence;
    k.segment = c.segment;
    k.offset = c.offset;
    k.length = c.length;
  }
  return "";
}

std::string Model::CheckNewGrant(
    const protocol::Grant& g,
    const std::vector<const GrantModel*>& others) const {
  if (g.size == 0) return "";  // no grant (a full keyspace admits readers)
  if (g.size != segment_size || g.start > g.size || g.start % ix::kUnit != 0) {
    return "grant geometry (size " + std::to_string(g.size) + ", start " +
           std::to_string(g.start) + ")";
  }
  if (g.segment >= segment_count) {
    return "grant of segment " + std::to_string(g.segment) + " of " +
           std::to_string(segment_count);
  }
  for (const GrantModel* o : others) {
    if (o->held && o->grant.segment == g.segment) {
      return "segment " + std::to_string(g.segment) +
             " granted while another connection holds it (grant " +
             std::to_string(o->grant.grant_id) + ")";
    }
  }
  for (const auto& [key, k] : keys) {
    if (k.present && k.segment == g.segment && k.offset + k.length > g.start) {
      return "grant of segment " + std::to_string(g.segment) + " from " +
             std::to_string(g.start) + " covers key '" + key +
             "' acknowledged at offset " + std::to_string(k.offset);
    }
  }
  return "";
}

}  // namespace kv::semfuzz
