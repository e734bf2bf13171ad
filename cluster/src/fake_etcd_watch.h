// FakeEtcdWatch: FakeEtcd's EtcdWatch. It reads the fake's event history
// from its next revision, waiting on the fake's condition variable. Like a
// real stream it is "established" once, and again after
// BreakWatchStreams(); compaction is checked then only, as etcd checks it
// when a watch starts (a live stream is not cut by a compaction).
#ifndef KV_CLUSTER_FAKE_ETCD_WATCH_H_
#define KV_CLUSTER_FAKE_ETCD_WATCH_H_

#include <atomic>
#include <memory>
#include <string>

#include "fake_etcd_state.h"
#include "kv/cluster/etcd_watch.h"

namespace kv::cluster {

class FakeEtcdWatch : public EtcdWatch {
 public:
  FakeEtcdWatch(std::shared_ptr<FakeEtcdState> state, std::string prefix,
                int64_t start_revision);

  Result<std::vector<WatchEvent>> Next(
      std::chrono::milliseconds timeout) override;
  int64_t next_revision() const override { return next_revision_; }
  int64_t compact_revision() const override { return compact_revision_; }
  void Cancel() override;

 private:
  // One look at the state (s_->mu held): establishes the stream if needed,
  // then collects the events from next_revision_. Sets final_ on
  // compaction or cancellation.
  std::vector<WatchEvent> Poll();

  const std::shared_ptr<FakeEtcdState> s_;
  const std::string prefix_;
  std::atomic<int64_t> next_revision_;
  std::atomic<int64_t> compact_revision_{0};
  bool established_ = false;
  uint64_t epoch_ = 0;
  Status final_;
  bool cancelled_ = false;  // guarded by s_->mu
};

}  // namespace kv::cluster

#endif  // KV_CLUSTER_FAKE_ETCD_WATCH_H_
