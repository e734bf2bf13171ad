#include "server_clock.h"

#include <chrono>

namespace kv {

std::atomic<int64_t> client_clock_offset_ms_for_testing{0};

int64_t ServerClock::LocalMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
             .count() +
         client_clock_offset_ms_for_testing.load(std::memory_order_relaxed);
}

uint64_t ServerClock::AgedError(int64_t now_local) const {
  const int64_t age = now_local > local_ms_ ? now_local - local_ms_ : 0;
  // Rounded up: 500 ppm of 1 ms is still an error of 1 ms.
  return error_ms_ +
         static_cast<uint64_t>((age * kDriftPpm + 999'999) / 1'000'000);
}

bool ServerClock::NeedsSync() const {
  if (!have_) return true;
  const int64_t now = LocalMs();
  return now < local_ms_ || now - local_ms_ > kResyncMs;
}

void ServerClock::AddSample(int64_t sent_local_ms, int64_t received_local_ms,
                            uint64_t server_ms) {
  if (received_local_ms < sent_local_ms) return;  // the local clock jumped
  const int64_t half = (received_local_ms - sent_local_ms + 1) / 2;
  const uint64_t error = static_cast<uint64_t>(half) + 1;
  // A sample replaces a better one only when that one has aged past it,
  // is stale, or the local clock ran backwards since it.
  if (have_ && received_local_ms >= local_ms_ &&
      received_local_ms - local_ms_ <= kResyncMs &&
      AgedError(received_local_ms) < error) {
    return;
  }
  have_ = true;
  local_ms_ = received_local_ms;
  server_ms_ = server_ms + static_cast<uint64_t>(half);
  error_ms_ = error;
}

ServerClock::Estimate ServerClock::Now() const {
  const int64_t now = LocalMs();
  Estimate e;
  // A local clock behind the sample (a test's jump) counts no time.
  e.now_ms =
      server_ms_ + static_cast<uint64_t>(now > local_ms_ ? now - local_ms_ : 0);
  e.error_ms = AgedError(now);
  return e;
}

bool ServerClock::Expired(uint64_t expiry_ms) const {
  const Estimate e = Now();
  return expiry_ms <= e.now_ms + e.error_ms;
}

int64_t ServerClock::RemainingMs(uint64_t expiry_ms) const {
  const Estimate e = Now();
  const uint64_t latest = e.now_ms + e.error_ms;
  return expiry_ms > latest ? static_cast<int64_t>(expiry_ms - latest) : 0;
}

}  // namespace kv
