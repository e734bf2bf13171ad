#include "refusal_log.h"

#include "log.h"

namespace kv::server {

void RefusalLog::Note(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_++ == 0) first_ = reason;
  const auto now = Clock::now();
  if (now - since_ >= interval_) WriteLocked(now);
}

void RefusalLog::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  WriteLocked(Clock::now());
}

void RefusalLog::WriteLocked(Clock::time_point now) {
  if (count_ > 0) {
    const double s =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - since_)
            .count() /
        1000.0;
    Logf("%llu COMMITs refused in the last %.1f s; the first: %s",
         static_cast<unsigned long long>(count_), s, first_.c_str());
  }
  count_ = 0;
  first_.clear();
  since_ = now;
}

}  // namespace kv::server
