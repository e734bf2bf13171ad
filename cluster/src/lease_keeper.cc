#include "kv/cluster/lease_keeper.h"

#include <algorithm>

namespace kv::cluster {

using std::chrono::milliseconds;
using std::chrono::seconds;

milliseconds LeaseKeeper::DefaultMargin(seconds ttl) {
  return std::max(milliseconds(500),
                  std::chrono::duration_cast<milliseconds>(ttl) / 10);
}

Clock::TimePoint LeaseKeeper::Deadline(Clock::TimePoint sent, seconds ttl,
                                       milliseconds margin) {
  return sent + ttl - margin;
}

Result<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Grant(
    Etcd& etcd, Clock& clock, Options options, std::function<void()> on_fence) {
  if (options.ttl.count() <= 0 || options.margin.count() < 0 ||
      options.retry.count() < 0) {
    return Status::InvalidArgument(
        "lease: the TTL must be positive and the margin and retry delay not "
        "negative");
  }
  // The deadline counts from before the request left, as for keepalives.
  const Clock::TimePoint sent = clock.Now();
  Result<Lease> lease = etcd.LeaseGrant(options.ttl.count());
  if (!lease.ok()) return lease.status();
  const seconds ttl(lease->ttl_s);
  const milliseconds margin =
      options.margin.count() > 0 ? options.margin : DefaultMargin(ttl);
  if (margin >= ttl) {
    (void)etcd.LeaseRevoke(lease->id);  // best effort: it expires anyway
    return Status::InvalidArgument(
        "lease: a margin of " + std::to_string(margin.count()) +
        " ms leaves nothing of a " + std::to_string(ttl.count()) +
        " s TTL; raise the TTL or lower the margin");
  }
  const milliseconds interval =
      std::chrono::duration_cast<milliseconds>(ttl) / 3;
  const milliseconds retry = options.retry.count() > 0
                                 ? options.retry
                                 : std::min(milliseconds(250), interval);
  return std::unique_ptr<LeaseKeeper>(new LeaseKeeper(
      etcd, clock, *lease, margin, interval, retry, sent, std::move(on_fence)));
}

LeaseKeeper::LeaseKeeper(Etcd& etcd, Clock& clock, Lease lease,
                         milliseconds margin, milliseconds interval,
                         milliseconds retry, Clock::TimePoint sent,
                         std::function<void()> on_fence)
    : etcd_(etcd),
      clock_(clock),
      lease_id_(lease.id),
      ttl_(lease.ttl_s),
      margin_(margin),
      interval_(interval),
      retry_(retry),
      on_fence_(std::move(on_fence)),
      deadline_(Deadline(sent, ttl_, margin).time_since_epoch().count()) {
  // Both threads start after every field is set.
  renewer_ = std::thread([this, sent] {
    Clock::TimePoint next = sent + interval_;
    while (!clock_.SleepUntil(next, stop_)) {
      const Clock::TimePoint now = clock_.Now();
      if (now >= deadline()) break;  // too late to renew: the fencer fences
      Result<int64_t> ttl = etcd_.LeaseKeepAlive(lease_id_);
      if (stop_.load()) break;
      if (ttl.ok() && *ttl > 0) {
        Renewed(now, seconds(*ttl));
        next = now + interval_;
      } else if (ttl.ok() || ttl.status().IsNotFound()) {
        FenceOnce();  // etcd says the lease is gone: its keys are gone
        break;
      } else {
        next = clock_.Now() + retry_;  // etcd unreachable: try again soon
      }
    }
  });
  fencer_ = std::thread([this] { FenceLoop(); });
}

LeaseKeeper::~LeaseKeeper() { Stop(); }

Clock::TimePoint LeaseKeeper::deadline() const {
  return Clock::TimePoint(Clock::Duration(deadline_.load()));
}

bool LeaseKeeper::Alive(Clock::TimePoint now) const {
  return !fenced_.load() && !stopped_.load() && now < deadline();
}

void LeaseKeeper::Renewed(Clock::TimePoint sent, seconds ttl) {
  bool late = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (fenced_.load() || stopped_.load()) return;
    // The answer came after the old deadline: Alive() has said false since
    // then, and a fenced owner stays fenced (it re-joins with a new lease).
    late = clock_.Now() >= deadline();
    if (!late) {
      const Clock::TimePoint d =
          std::max(deadline(), Deadline(sent, ttl, margin_));
      deadline_.store(d.time_since_epoch().count());
    }
  }
  if (late) FenceOnce();
}

void LeaseKeeper::FenceLoop() {
  while (true) {
    if (clock_.SleepUntil(deadline(), stop_)) return;
    // Woken at the deadline it slept towards; a renewal may have moved it.
    if (clock_.Now() >= deadline()) {
      FenceOnce();
      return;
    }
  }
}

void LeaseKeeper::FenceOnce() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (fenced_.load() || stopped_.load()) return;
    fenced_.store(true);
  }
  stop_.store(true);
  clock_.WakeSleepers();
  if (on_fence_) on_fence_();
}

void LeaseKeeper::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_.store(true);
  }
  stop_.store(true);
  clock_.WakeSleepers();
  std::lock_guard<std::mutex> l(join_mu_);
  if (renewer_.joinable()) renewer_.join();
  if (fencer_.joinable()) fencer_.join();
}

Status LeaseKeeper::Revoke() {
  Stop();
  Status s = etcd_.LeaseRevoke(lease_id_);
  if (s.IsNotFound()) return Status::Ok();
  return s;
}

}  // namespace kv::cluster
