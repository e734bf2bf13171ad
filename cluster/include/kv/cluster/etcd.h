// kv::cluster::Etcd: what the cluster needs from etcd (DESIGN.md "Beyond
// one machine"): reads with the revision they saw, writes guarded by that
// revision (Txn), leases for registrations and fencing, and watches that
// resume where they stopped.
//
// Two implementations keep one contract (tests/etcd_contract_test.h runs
// the same suite against both): EtcdHttp (etcd_http.h) talks to a real
// etcd; FakeEtcd (fake_etcd.h) is an in-process one for unit tests.
//
// Errors common to every operation (not repeated below):
//   invalid_argument  an empty key (or one etcd refuses), a negative
//                     revision, a TTL outside 1..9e9 s;
//   unavailable       no endpoint could be reached (refused, reset, no
//                     leader); the message names the endpoint and what to
//                     check;
//   timed_out         etcd did not answer in time (the request may still
//                     have been applied: re-read before retrying a write);
//   corruption        etcd's answer could not be decoded;
//   no_space          etcd's quota is exhausted (it refuses writes);
//   permission_denied etcd's authentication refused the request;
//   io_error          any other error etcd reported (message included).
// A failed call changed nothing, except after timed_out or a connection
// broken mid-request, where a write may or may not have been applied.
//
// Keys and values are arbitrary bytes. Thread-safety: every method may be
// called from any number of threads at once.
#ifndef KV_CLUSTER_ETCD_H_
#define KV_CLUSTER_ETCD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kv/cluster/etcd_types.h"
#include "kv/cluster/etcd_watch.h"
#include "kv/status.h"

namespace kv::cluster {

class Etcd {
 public:
  virtual ~Etcd() = default;

  // Reads `key`. The Range holds the key (kvs has one element) or nothing
  // (kvs empty: the key is absent — not an error, the revision still
  // tells when it was absent).
  virtual Result<Range> Get(std::string_view key) = 0;

  // Reads every key that starts with `prefix`, sorted by key. An empty
  // prefix reads the whole store.
  virtual Result<Range> GetPrefix(std::string_view prefix) = 0;

  // Stores `value` under `key`, attached to `lease` (0: none). Returns the
  // revision of this write.
  // Errors: not_found when `lease` does not exist (expired or revoked).
  virtual Result<int64_t> Put(std::string_view key, std::string_view value,
                              int64_t lease = 0) = 0;

  // Removes `key`. Deleting an absent key succeeds with deleted = false
  // and does not change the revision.
  virtual Result<DeleteResult> Delete(std::string_view key) = 0;

  // If every compare holds (an empty list always holds), applies
  // `success`, else `failure`, atomically at one new revision (unchanged
  // when the branch changed nothing). A compare that does not hold is not
  // an error: the result says succeeded = false, and its revision is the
  // current one to re-read from. This is how every map change is guarded
  // by the revision its writer saw (Compare::ModRevisionIs).
  // Errors: invalid_argument when a branch names one key twice; not_found
  // when a put of the branch that ran names a lease that does not exist.
  virtual Result<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure) = 0;

  // Creates a lease of `ttl_s` seconds. The granted TTL may be longer (etcd
  // raises short ones to its minimum, 2 s with default timings). The lease
  // expires TTL after its grant or last keepalive; its keys are deleted
  // then (all at one revision).
  virtual Result<Lease> LeaseGrant(int64_t ttl_s) = 0;

  // Restarts `id`'s TTL; returns the TTL it now has (seconds).
  // Errors: not_found when the lease expired or was revoked (its keys are
  // gone: whoever held it must stop acting on it).
  virtual Result<int64_t> LeaseKeepAlive(int64_t id) = 0;

  // Ends lease `id` now and deletes its keys.
  // Errors: not_found when it does not exist (expired, revoked).
  virtual Status LeaseRevoke(int64_t id) = 0;

  // Discards the history before `revision` (watches and reads cannot go
  // back past it any more).
  // Errors: invalid_argument when `revision` is in the future; not_found
  // when it was compacted already.
  virtual Status Compact(int64_t revision) = 0;

  // Opens a watch of every key starting with `prefix` (empty: all keys),
  // from `start_revision` (0: changes after now; else usually the
  // revision of a read + 1). Does not contact etcd: the first Next()
  // does, and reports what goes wrong then (etcd_watch.h). The watch must
  // not outlive this Etcd.
  virtual Result<std::unique_ptr<EtcdWatch>> Watch(std::string_view prefix,
                                                   int64_t start_revision) = 0;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_H_
