// libFuzzer target: every decoder the client runs on bytes a server sends
// (accept private data, WELCOME, COMMIT_ACK, REFILL_ACK, status text) and
// the reader algorithm over an arbitrary neighbourhood and log. Nothing
// may crash, read out of bounds or loop; a decoded Accept must satisfy the
// geometry the reader relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kv/index_lookup.h"
#include "kv/protocol.h"

namespace pr = kv::protocol;
namespace il = kv::index_lookup;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pr::Accept a;
  if (pr::DecodeAccept(data, size, &a).ok() && a.admit == pr::Admit::kOk) {
    if (a.bucket_count == 0 || (a.bucket_count & (a.bucket_count - 1)) != 0 ||
        a.segment_size == 0 || a.grant.start > a.grant.size) {
      std::abort();
    }
  }
  pr::Header h;
  if (pr::DecodeHeader(data, size, &h).ok()) {
    if (pr::kHeaderSize + h.length > size) std::abort();
    const uint8_t* payload = data + pr::kHeaderSize;
    pr::CommitAck ack;
    (void)pr::DecodeCommitAck(payload, h.length, &ack);
    pr::RefillAck refill;
    (void)pr::DecodeRefillAck(payload, h.length, 65536, &refill);
    kv::StatusCode code;
    std::string text;
    (void)pr::DecodeStatusText(payload, h.length, &code, &text);
  }
  // The reader algorithm: the first 128 bytes are a neighbourhood, the
  // rest a log of a 4 KiB-segment keyspace.
  if (size >= il::kNeighbourhoodBytes) {
    uint64_t neigh[il::kNeighbourhoodSlots];
    std::memcpy(neigh, data, sizeof(neigh));
    const size_t log_size = (size - il::kNeighbourhoodBytes) / 4096 * 4096;
    std::vector<uint8_t> log(data + il::kNeighbourhoodBytes,
                             data + il::kNeighbourhoodBytes + log_size);
    const il::Geometry g{1, 1024, log_size, 4096};
    const std::string_view key = "key";
    (void)il::ChooseNewest(
        neigh, g, key, kv::index_format::HashKey(key),
        [&](size_t, uint64_t slot) -> const uint8_t* {
          // ChooseNewest asks only for in-bounds slots.
          if (!kv::index_format::SlotInBounds(slot, log_size, 4096)) {
            std::abort();
          }
          return log.data() + kv::index_format::SlotLogOffset(slot);
        });
  }
  return 0;
}
