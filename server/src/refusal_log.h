// kv::server::RefusalLog — refused COMMITs in the server's log as a
// rate-limited summary: at most one line per interval with the count and
// the first reason, so that 69,153 refusals leave a trace without 69,153
// lines (and a client cannot flood the log).
// Thread-safety: thread-safe.
#ifndef KV_SERVER_REFUSAL_LOG_H_
#define KV_SERVER_REFUSAL_LOG_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace kv::server {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RefusalLog(std::chrono::milliseconds interval)
      : interval_(interval) {}
  // Flushes what is pending.
  ~RefusalLog() { Flush(); }

  // A COMMIT was refused for `reason`: counted, and the summary line is
  // written once `interval` has passed since the last one.
  void Note(const std::string& reason);
  // Writes the pending summary now (shutdown).
  void Flush();

 private:
  void WriteLocked(Clock::time_point now);

  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  uint64_t count_ = 0;
  std::string first_;
  Clock::time_point since_ = Clock::now();
};

}  // namespace kv::server

#endif  // KV_SERVER_REFUSAL_LOG_H_
