// kv::store::Persister — the one door through which the store makes bytes
// durable.
//
// Every persist in the store goes through Persist() or PersistRanges();
// nothing else flushes.
// Production uses libpmem2's persist function for the mapping (cache-line
// flush + fence on DAX, msync on a page-granularity file); tests substitute
// a persistence tracker that records which cache lines were persisted and
// can build the image a power failure would leave at any persist point.
//
// Thread-safety: implementations must allow concurrent Persist() calls.
#ifndef KV_STORE_PERSISTER_H_
#define KV_STORE_PERSISTER_H_

#include <cstddef>

namespace kv::store {

class Persister {
 public:
  virtual ~Persister() = default;

  // Makes [addr, addr + len) durable before returning. Stores made before
  // the call (by this thread) are covered; 8-byte aligned stores are
  // failure-atomic, larger ranges are not (any cache line may or may not
  // have reached media when a failure interrupts the call).
  virtual void Persist(const void* addr, size_t len) = 0;

  struct Range {
    const void* addr;
    size_t len;
  };

  // Makes all n ranges durable before returning, in no particular order: a
  // failure during the call may leave any subset of their cache lines
  // durable. It is one persist point, which lets a page-granularity mapping
  // pay for one msync instead of n (a commit persists its record and its
  // slot this way). The default persists the ranges one by one.
  virtual void PersistRanges(const Range* ranges, size_t n) {
    for (size_t i = 0; i < n; i++) Persist(ranges[i].addr, ranges[i].len);
  }

  void PersistPair(const void* a, size_t a_len, const void* b, size_t b_len) {
    const Range r[2] = {{a, a_len}, {b, b_len}};
    PersistRanges(r, 2);
  }
};

}  // namespace kv::store

#endif  // KV_STORE_PERSISTER_H_
