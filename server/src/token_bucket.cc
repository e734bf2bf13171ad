#include "token_bucket.h"

#include <algorithm>
#include <cmath>

namespace kv::server {

TokenBucket::TokenBucket(uint32_t rate, uint32_t burst)
    : rate_(std::max<uint32_t>(rate, 1)),
      burst_(std::max<uint32_t>(burst, 1)),
      tokens_(burst_),
      last_(Clock::now()) {}

bool TokenBucket::Take(Clock::time_point now,
                       std::chrono::milliseconds* retry_after) {
  if (now > last_) {
    const double secs = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + secs * rate_);
    last_ = now;
  }
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return true;
  }
  const double wait_ms = std::ceil((1.0 - tokens_) / rate_ * 1000.0);
  *retry_after = std::chrono::milliseconds(
      std::max<int64_t>(1, static_cast<int64_t>(wait_ms)));
  return false;
}

}  // namespace kv::server
