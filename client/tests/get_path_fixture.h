// GetPathTest: a kvserver on 127.0.0.1 (the e2e ClientTest fixture) and
// the engine's test hooks (client/src/engine.h), which change what a
// client's one-sided reads and received messages brought back. The
// server is real; only what the client sees is scripted.
#ifndef KV_CLIENT_TESTS_GET_PATH_FIXTURE_H_
#define KV_CLIENT_TESTS_GET_PATH_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "client_fixture.h"
#include "engine.h"
#include "kv/index_format.h"
#include "kv/record_format.h"

namespace kv::client_test {

namespace ix = kv::index_format;
namespace il = kv::index_lookup;
namespace rf = kv::record_format;

inline constexpr int kMaxAttempts = 8;  // client/src/get_path.cc

class GetPathTest : public e2e::ClientTest {
 public:
  // Calls fn for the completed reads of every get of `key`.
  void OnReads(std::string key,
               std::function<void(const Op&, uint8_t* arena)> fn) {
    engine_hooks_for_testing.reads_done = [key = std::move(key),
                                           fn = std::move(fn)](const Op& op,
                                                               uint8_t* arena) {
      if (op.key == key) fn(op, arena);
    };
  }
  // A client without a slot cache: every get is cold (two round trips).
  std::unique_ptr<Client> Cold() {
    ClientOptions o = Options();
    o.slot_cache_entries = 0;
    o.op_timeout = std::chrono::milliseconds(5000);
    return Open(o);
  }

 protected:
  void TearDown() override {
    engine_hooks_for_testing = {};
    ClientTest::TearDown();
  }
};

// The neighbourhood bytes a kNeighbourhood or kConfirm read brought.
inline void LoadNeigh(const Op& op, const uint8_t* arena,
                      uint64_t out[il::kNeighbourhoodSlots]) {
  std::memcpy(out, arena + op.neigh_off, il::kNeighbourhoodBytes);
}
inline void StoreNeigh(const Op& op, uint8_t* arena,
                       const uint64_t in[il::kNeighbourhoodSlots]) {
  std::memcpy(arena + op.neigh_off, in, il::kNeighbourhoodBytes);
}

// The first position whose slot may hold the key; -1 when none.
inline int KeyPos(const uint64_t* neigh, std::string_view key) {
  for (size_t i = 0; i < il::kNeighbourhoodSlots; i++) {
    if (il::MayHold(neigh[i], ix::HashKey(key))) return static_cast<int>(i);
  }
  return -1;
}

// The header of a record the client read (its keyspace id, sequence).
inline rf::RecordHeader HeaderAt(const uint8_t* rec) {
  rf::RecordHeader h;
  std::memcpy(&h, rec, rf::kHeaderSize);
  return h;
}

}  // namespace kv::client_test

#endif  // KV_CLIENT_TESTS_GET_PATH_FIXTURE_H_
