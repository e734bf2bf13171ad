// kv::server::TokenBucket — a rate limit: `rate` tokens per second, at
// most `burst` saved up. Used per connection for REFILL (server/README.md,
// "Limits"), so that one client cannot take segments as fast as it asks.
// Thread-safety: none (one session thread).
#ifndef KV_SERVER_TOKEN_BUCKET_H_
#define KV_SERVER_TOKEN_BUCKET_H_

#include <chrono>
#include <cstdint>

namespace kv::server {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts full. rate and burst must be at least 1.
  TokenBucket(uint32_t rate, uint32_t burst);

  // Takes one token: true, or false with *retry_after set to when the
  // next token will be there (at least 1 ms).
  bool Take(Clock::time_point now, std::chrono::milliseconds* retry_after);

 private:
  const double rate_;  // tokens per second
  const double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace kv::server

#endif  // KV_SERVER_TOKEN_BUCKET_H_
