// kv::cluster::EtcdWatch: the changes under one key prefix, in revision
// order, pulled by the caller (poll style: there is no thread and no
// callback inside; a server or client runs its own loop around Next()).
//
// A watch tracks the next revision it has to deliver. When its stream
// breaks (etcd restarted, a connection dropped, a response it could not
// decode), the next Next() reconnects — to the next endpoint when the
// current one is down — and asks for exactly next_revision() onwards, so
// no event is lost and none is delivered twice. The one thing it cannot
// survive is compaction: when etcd no longer holds next_revision(), Next()
// returns not_found and the caller re-reads (GetPrefix) and opens a new
// watch from that read's revision + 1.
//
// Thread-safety: Next() and next_revision() from one thread at a time;
// Cancel() from any thread, also while Next() waits. The watch must not
// outlive the Etcd that opened it.
#ifndef KV_CLUSTER_ETCD_WATCH_H_
#define KV_CLUSTER_ETCD_WATCH_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "kv/cluster/etcd_types.h"
#include "kv/status.h"

namespace kv::cluster {

class EtcdWatch {
 public:
  virtual ~EtcdWatch() = default;

  // Waits up to `timeout` for changes and returns those of the first
  // revisions that arrived (all events of a revision come together), in
  // revision order; an empty vector when none arrived in time.
  // next_revision() moves past what is returned.
  // Errors:
  //   not_found    next_revision() was compacted away; the message names
  //                the compaction revision (compact_revision() too). Final:
  //                every later call returns it again.
  //   unavailable  no endpoint accepted the stream during the whole
  //                timeout (refused, reset, no leader), or Cancel() was
  //                called (final). Otherwise the next call retries.
  //   timed_out    connecting timed out during the whole timeout; the next
  //                call retries.
  //   corruption   etcd sent something that is not a watch response; the
  //                stream is dropped and the next call reconnects from
  //                next_revision().
  //   invalid_argument  etcd refused the watch request itself.
  virtual Result<std::vector<WatchEvent>> Next(
      std::chrono::milliseconds timeout) = 0;

  // The first revision not delivered yet: the start revision until an
  // event arrives, then the last delivered event's revision + 1. A watch
  // opened with start revision 0 ("from now") reports the store's
  // revision + 1 once its stream is established, 0 before.
  virtual int64_t next_revision() const = 0;

  // After Next() returned not_found: the revision etcd compacted to
  // (events before it are gone). 0 otherwise.
  virtual int64_t compact_revision() const = 0;

  // Ends the watch: a waiting Next() returns promptly, it and every later
  // call return unavailable. Idempotent; thread-safe.
  virtual void Cancel() = 0;
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_ETCD_WATCH_H_
