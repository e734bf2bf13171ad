#include "auth_delay.h"

#include <poll.h>

#include <algorithm>
#include <cmath>

namespace kv::server {

AuthDelay::AuthDelay(std::chrono::milliseconds base,
                     std::chrono::milliseconds max, int stop_fd)
    : base_(base), max_(max), stop_fd_(stop_fd), last_(Clock::now()) {}

std::chrono::milliseconds AuthDelay::Fail(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now > last_) {
    const double secs = std::chrono::duration<double>(now - last_).count();
    recent_ *= std::exp2(-secs / 10.0);
    last_ = now;
  }
  recent_ += 1.0;
  if (base_.count() == 0) return std::chrono::milliseconds(0);
  const double ms =
      static_cast<double>(base_.count()) * (1.0 + 0.1 * (recent_ - 1.0));
  return std::min(max_, std::chrono::milliseconds(static_cast<int64_t>(ms)));
}

void AuthDelay::FailAndWait() {
  const auto wait = Fail(Clock::now());
  if (wait.count() <= 0) return;
  const auto until = Clock::now() + wait;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - Clock::now());
    if (left.count() <= 0) return;
    pollfd p{stop_fd_, POLLIN, 0};
    // poll ignores a negative fd: then this is a plain sleep.
    if (poll(&p, 1, static_cast<int>(left.count()) + 1) > 0 && p.revents) {
      return;
    }
  }
}

}  // namespace kv::server
