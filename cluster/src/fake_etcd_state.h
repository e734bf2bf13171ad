// What a FakeEtcd holds, shared with its watches. Every field is guarded
// by `mu`; `changed` is notified on every write, on SetUnavailable and on
// BreakWatchStreams, which is what a waiting FakeEtcdWatch::Next waits for.
#ifndef KV_CLUSTER_FAKE_ETCD_STATE_H_
#define KV_CLUSTER_FAKE_ETCD_STATE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kv/cluster/etcd_types.h"
#include "kv/cluster/fake_etcd.h"

namespace kv::cluster {

struct FakeLease {
  int64_t ttl_s = 0;
  std::chrono::milliseconds deadline{0};
  std::set<std::string> keys;
};

struct FakeEtcdState {
  explicit FakeEtcdState(FakeEtcd::Options o) : options(o) {}

  const FakeEtcd::Options options;
  mutable std::mutex mu;
  std::condition_variable changed;
  int64_t revision = 1;   // etcd starts at 1 with an empty store
  int64_t compacted = 0;  // watches cannot start below this revision
  std::map<std::string, KeyValue> kvs;
  std::vector<WatchEvent> history;  // every event, in revision order
  std::map<int64_t, FakeLease> leases;
  int64_t next_lease_id = 0x694d'7a0c'0000'0001;  // large, like etcd's
  std::chrono::milliseconds now{0};
  bool down = false;
  bool watches_held = false;  // HoldWatches
  uint64_t stream_epoch = 0;  // bumped by BreakWatchStreams
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_FAKE_ETCD_STATE_H_
