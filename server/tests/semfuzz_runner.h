// Runner: executes one commit_semantic_fuzzer input's ops against the
// running SemServer with its raw clients, keeping the reference Model in
// step and checking the store after every op (see the fuzzer's header for
// the checks). Every failed check is a Violation().
// Thread-safety: one thread; one Runner per input.
#ifndef KV_SERVER_TESTS_SEMFUZZ_RUNNER_H_
#define KV_SERVER_TESTS_SEMFUZZ_RUNNER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "raw_client.h"
#include "semfuzz_env.h"
#include "semfuzz_model.h"

namespace kv::semfuzz {

inline constexpr int kClients = 3;
inline constexpr int kKeys = 8;
inline constexpr size_t kMaxOps = 48;

// The input bytes, read front to back; past the end every read is 0.
struct Input {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;
  bool empty() const { return pos >= size; }
  uint8_t U8() { return pos < size ? data[pos++] : 0; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= uint32_t{U8()} << (8 * i);
    return v;
  }
  uint64_t U64() { return U32() | (uint64_t{U32()} << 32); }
};

// A record a client wrote (committed or not), by where it lies.
struct Written {
  bool valid = false;
  uint32_t segment = 0;
  uint64_t offset = 0;  // in the segment
  uint32_t length = 0;
  uint64_t key_hash = 0;
  bool tombstone = false;
  std::string key;
};

class Runner {
 public:
  Runner(SemServer* server, const std::vector<e2e::RawClient*>& clients);
  // Reads one op and its arguments from *in, runs it, checks the store.
  void Op(Input* in);
  // Every client pings (the server still serves) and says BYE.
  void Finish();
  // After the server stopped: the pool reopened writable (recovery of a
  // clean close) passes Check() and holds exactly the acknowledged keys.
  void CheckReopened(const std::string& pool_path);

 private:
  struct Conn {
    e2e::RawClient* rc = nullptr;
    bool connected = false;
    GrantModel g;
    Written pending;     // last record written and not yet committed
    Written last_acked;  // last record this connection had acknowledged
    uint32_t next_request = 1;
  };

  void Ensure(int c);
  void Connect(int c);
  void Gone(int c);
  // Sends a message and waits for its reply; false when the connection
  // ended instead (then the connection is marked gone).
  bool Exchange(int c, protocol::Type type, const std::string& payload,
                protocol::Header* h, std::string* reply);
  // Writes a record at the grant's tail; false when it does not fit.
  bool WriteRecord(int c, const std::string& key, const std::string& value,
                   bool tombstone);
  void Commit(int c, const protocol::Commit& cm);
  void Put(int c, Input* in, bool tombstone);
  void FuzzCommit(int c, Input* in);
  void Refill(int c, bool for_delete);
  void Info(int c, uint8_t topic);
  void Bye(int c);
  void CheckStore(const std::string& after);
  // The keyspace holds exactly the model's acknowledged keys and values.
  void CheckKeys(store::Keyspace* ks, const std::string& when);
  std::string Describe(int c, const protocol::Commit& cm) const;

  SemServer* const server_;
  Conn conns_[kClients];
  Model model_;
  bool geometry_known_ = false;
  size_t step_ = 0;
};

// The key of index i (a few long ones, so records vary in size).
std::string KeyName(uint32_t i);

}  // namespace kv::semfuzz

#endif  // KV_SERVER_TESTS_SEMFUZZ_RUNNER_H_
