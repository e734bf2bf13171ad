// kv::server::AuthDelay — slows down access-key guessing, like
// PostgreSQL's auth_delay: every wrong key waits before its refusal is
// sent, `base` plus 10% of `base` per recent failure (server-wide, decaying
// with a 10 s half-life), at most `max`.
//
// The wait runs on the refused session's own thread while the connection
// still counts as waiting for HELLO, so at most --max_pending_hello
// refusals wait at once: guessing is bounded by max_pending_hello / delay
// per second, and the delay cannot pin more than those connections.
// Thread-safety: thread-safe.
#ifndef KV_SERVER_AUTH_DELAY_H_
#define KV_SERVER_AUTH_DELAY_H_

#include <chrono>
#include <mutex>

namespace kv::server {

class AuthDelay {
 public:
  using Clock = std::chrono::steady_clock;
  // `stop_fd`: readable once the server shuts down (ends a wait early);
  // -1 for none.
  AuthDelay(std::chrono::milliseconds base, std::chrono::milliseconds max,
            int stop_fd);

  // Counts one failure and returns how long its refusal is to wait.
  std::chrono::milliseconds Fail(Clock::time_point now);
  // Counts one failure and waits (until the delay or the stop fd).
  void FailAndWait();

 private:
  const std::chrono::milliseconds base_;
  const std::chrono::milliseconds max_;
  const int stop_fd_;
  std::mutex mu_;
  double recent_ = 0;  // decayed failure count
  Clock::time_point last_;
};

}  // namespace kv::server

#endif  // KV_SERVER_AUTH_DELAY_H_
