// The reference model commit_semantic_fuzzer holds next to the server: what
// every connection's grant is and contains (a byte shadow of the segment,
// zero when granted, plus every record the client wrote and every seal the
// server's acks imply), the grant's append tail, and every key's
// acknowledged state. From it, Predict() says what the server must answer
// to a COMMIT under the documented rules (docs/protocol.md "Put and
// delete", Keyspace::Commit in store/include/kv/store/keyspace.h) with
// overflow-safe arithmetic; the fuzzer compares that with the real answer.
// Thread-safety: a plain value.
#ifndef KV_SERVER_TESTS_SEMFUZZ_MODEL_H_
#define KV_SERVER_TESTS_SEMFUZZ_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kv/protocol.h"
#include "kv/record_format.h"

namespace kv::semfuzz {

// A key's acknowledged state; `present` false: never put, or deleted.
struct KeyState {
  bool present = false;
  std::string value;
  uint64_t sequence = 0;
  uint32_t segment = 0;  // where the live version lies (present only)
  uint64_t offset = 0;
  uint32_t length = 0;
};

struct GrantModel {
  bool held = false;
  protocol::Grant grant;
  uint64_t tail = 0;            // the server's append tail (segment offset)
  std::vector<uint8_t> shadow;  // the segment's bytes as the server has them
  void Reset(const protocol::Grant& g, uint32_t segment_size);
  bool reserve() const { return grant.flags & protocol::kGrantDeletesOnly; }
};

// What the server must do with one COMMIT.
struct Prediction {
  bool ok = false;             // must be acknowledged with status ok
  bool advances_tail = false;  // the claim passes: tail = offset + length
  std::string why;             // why it must be refused (when !ok)
  bool condition_failed = false;
  // When ok: the record committed (views into the shadow).
  record_format::RecordView view;
};

struct Model {
  uint32_t keyspace_id = 0;
  uint32_t segment_size = 0;
  uint32_t max_value_size = 0;
  uint32_t segment_count = 0;
  uint64_t last_sequence = 0;
  std::map<std::string, KeyState> keys;

  // Prediction for commit `c` sent by a connection with grant `g`.
  Prediction Predict(const GrantModel& g, const protocol::Commit& c) const;
  // After the server acknowledged `c` as predicted: seals the record in
  // the shadow, moves the key. Returns "" or what is wrong with the ack.
  std::string Apply(GrantModel* g, const protocol::Commit& c,
                    const Prediction& p, const protocol::CommitAck& ack);
  // "" when a new grant is acceptable: a segment of the log, aligned start,
  // not held by another connection (`others`), not covering any live
  // acknowledged record.
  std::string CheckNewGrant(const protocol::Grant& g,
                            const std::vector<const GrantModel*>& others) const;
};

}  // namespace kv::semfuzz

#endif  // KV_SERVER_TESTS_SEMFUZZ_MODEL_H_
