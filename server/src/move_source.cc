#include "move_source.h"

#include <chrono>
#include <string>
#include <vector>

#include "kv/record_format.h"
#include "log.h"

namespace kv::server {

// The commit point's forwarder: copies each committed record over the
// link; the first failure fails the move (the commit stands).
class MoveSource::LinkForwarder : public Forwarder {
 public:
  LinkForwarder(std::shared_ptr<PeerLink> link, MoveSource* owner)
      : link_(std::move(link)), owner_(owner) {}
  Status Forward(const ForwardedRecord* records, size_t n) override {
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
      Result<uint64_t> t = link_->Submit(records[i].data, records[i].length);
      if (!t.ok()) {
        owner_->Fail(t.status());
        return Status::Ok();
      }
      last = *t;
    }
    Status st = link_->WaitFor(last);
    if (!st.ok()) {
      owner_->Fail(st);
      return Status::Ok();
    }
    forwarded_.fetch_add(n, std::memory_order_relaxed);
    return Status::Ok();
  }
  uint64_t forwarded() const {
    return forwarded_.load(std::memory_order_relaxed);
  }

 private:
  const std::shared_ptr<PeerLink> link_;
  MoveSource* const owner_;
  std::atomic<uint64_t> forwarded_{0};
};

MoveSource::MoveSource(Options options) : options_(std::move(options)) {}

Result<std::unique_ptr<MoveSource>> MoveSource::Start(Options options) {
  if (options.keyspace == nullptr || options.commit_point == nullptr) {
    return Status::InvalidArgument(
        "a move needs the shard and its commit "
        "point");
  }
  std::unique_ptr<MoveSource> m(new MoveSource(std::move(options)));
  Result<std::unique_ptr<PeerLink>> link = PeerLink::Open(m->options_.link);
  if (!link.ok()) return link.status();
  m->link_ = std::move(link).value();
  m->forwarder_ = std::make_shared<LinkForwarder>(m->link_, m.get());
  // Forwarding before the copier lists the keys: a key written after the
  // list is forwarded, one written before is listed.
  m->options_.commit_point->Attach(m->forwarder_);
  m->copier_ = std::thread([raw = m.get()] { raw->Copy(); });
  return m;
}

MoveSource::~MoveSource() {
  bool frozen = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    frozen = frozen_;
  }
  changed_.notify_all();
  if (copier_.joinable()) copier_.join();
  // Frozen: the shard is (about to be) the target's; its commits stay
  // refused. Otherwise the source serves it alone again.
  if (!frozen) options_.commit_point->Detach();
}

void MoveSource::Fail(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!progress_.failure.ok()) return;
  progress_.failure = why;
  Logf("move of '%s' to %s failed: %s", options_.keyspace->name().c_str(),
       options_.link.target.ToString().c_str(), why.ToString().c_str());
  changed_.notify_all();
}

MoveSource::Progress MoveSource::progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  Progress p = progress_;
  p.keys_forwarded = forwarder_->forwarded();
  return p;
}

void MoveSource::SetPaused(bool paused) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.paused = paused;
  changed_.notify_all();
}

void MoveSource::SetRate(uint64_t bytes_per_s) {
  std::lock_guard<std::mutex> lock(mu_);
  options_.rate_bytes_per_s = bytes_per_s;
  changed_.notify_all();
}

bool MoveSource::Pace(uint64_t bytes) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] {
    return stop_ || !options_.paused || !progress_.failure.ok();
  });
  if (stop_ || !progress_.failure.ok()) return false;
  if (options_.rate_bytes_per_s == 0) return true;
  // bytes at rate: the time this record's share of the budget takes.
  const auto wait =
      std::chrono::microseconds(bytes * 1000000 / options_.rate_bytes_per_s);
  changed_.wait_until(lock, Clock::now() + wait, [&] { return stop_; });
  return !stop_;
}

void MoveSource::Copy() {
  store::Keyspace& ks = *options_.keyspace;
  std::vector<std::string> keys;
  Status st = ks.ForEach([&](const record_format::RecordView& v) {
    keys.emplace_back(v.key);
    std::lock_guard<std::mutex> lock(mu_);
    return !stop_;
  });
  if (!st.ok()) {
    Fail(Status(st.code(), "listing the shard's keys: " + st.message()));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_.keys_total = keys.size();
  }
  uint64_t sent = 0;  // the previous record's bytes: paced before the next
  uint64_t last = 0;  // the last record's ticket
  for (const std::string& key : keys) {
    if (!Pace(sent)) return;
    sent = 0;
    // Submitted under the key's stripe: no commit of it is between its
    // decide and its forward meanwhile, so the link (ordered) carries its
    // versions in order. The copier does not wait for each record: the
    // link keeps a window of them in flight.
    st = ks.WithCurrentRecord(key, [&](const uint8_t* rec, size_t n) {
      Result<uint64_t> t = link_->Submit(rec, n, /*background=*/true);
      if (!t.ok()) {
        Fail(t.status());
        return;
      }
      last = *t;
      sent = n;
    });
    if (!st.ok() && !st.IsNotFound()) Fail(st);  // not_found: gone since
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!progress_.failure.ok()) return;
      progress_.keys_copied++;
      progress_.bytes_copied += sent;
    }
  }
  // Every record submitted is committed on the target before the copy
  // counts as complete.
  if (last != 0) {
    st = link_->WaitFor(last);
    if (!st.ok()) {
      Fail(st);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  progress_.copied = true;
  Logf("move of '%s' to %s: copied %llu keys (%llu bytes)", ks.name().c_str(),
       options_.link.target.ToString().c_str(),
       static_cast<unsigned long long>(progress_.keys_copied),
       static_cast<unsigned long long>(progress_.bytes_copied));
}

Result<uint64_t> MoveSource::Freeze() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!progress_.failure.ok()) return progress_.failure;
    if (!progress_.copied) {
      return Status::Busy("the copy of '" + options_.keyspace->name() +
                          "' is not complete");
    }
  }
  // Waits for every MakeDurable in flight: each has forwarded its records
  // (or failed the move, checked below).
  options_.commit_point->Freeze();
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure = progress_.failure;
    if (failure.ok()) {
      frozen_ = true;
      return options_.keyspace->LastSequence();
    }
  }
  // A forward failed before the freeze: the target lacks a commit. The
  // source serves the shard alone again.
  options_.commit_point->Detach();
  return failure;
}

void MoveSource::EndJoin() {
  std::lock_guard<std::mutex> lock(mu_);
  frozen_ = false;
}

void MoveSource::Unfreeze() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!frozen_) return;
    frozen_ = false;
  }
  options_.commit_point->Attach(forwarder_);
}

}  // namespace kv::server
