// kv::ServerClock — a client's estimate of the server's clock, which
// decides expiries (docs/protocol.md, "Server clock"). Private to client/.
//
// A sample is one INFO ping: the client's local clock when it sent the
// request (t0) and when the reply arrived (t1), and the server's clock
// (Unix ms) written into the reply in between. The server's clock at
// local time t1 is then within [s, s + (t1 - t0)]: the estimate takes the
// middle, s + (t1 - t0) / 2, with an error of (t1 - t0) / 2 + 1 ms (the
// server's millisecond truncation). Afterwards the estimate runs on the
// client's local clock — a monotonic one, so a change of the client's
// wall clock does not move it — and its error grows by kDriftPpm of the
// time since the sample (two clocks' rates differ; NTP slews at most 500
// ppm). A sample older than kResyncMs, or a local clock that ran
// backwards since (only a test hook can do that), calls for a new one.
//
// Expired(e) is conservative: a record is absent to the client once the
// server's clock *may* have reached e (estimate + error >= e). A client
// never returns a value after its expiry on the server's clock; it may
// report a key absent up to 2 x error early.
//
// Thread-safety: none; the Client serializes use (its mutex).
#ifndef KV_CLIENT_SRC_SERVER_CLOCK_H_
#define KV_CLIENT_SRC_SERVER_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace kv {

// Tests: milliseconds added to the client's local clock (a client whose
// clock is skewed, or jumps). Set it from the test's thread only while no
// client runs an operation.
extern std::atomic<int64_t> client_clock_offset_ms_for_testing;

class ServerClock {
 public:
  static constexpr int64_t kDriftPpm = 500;
  static constexpr int64_t kResyncMs = 10'000;

  // The client's local clock: monotonic milliseconds (plus the test
  // offset).
  static int64_t LocalMs();

  // Whether a ping must run before an expiry is judged: no sample yet,
  // one older than kResyncMs, or the local clock ran backwards since.
  bool NeedsSync() const;
  // Takes a sample (local send and receive times, the server's clock from
  // the reply) when it is better than the current one aged.
  void AddSample(int64_t sent_local_ms, int64_t received_local_ms,
                 uint64_t server_ms);

  struct Estimate {
    uint64_t now_ms = 0;    // the server's clock, estimated
    uint64_t error_ms = 0;  // |true - estimate| <= error_ms
  };
  // Precondition: a sample was taken.
  Estimate Now() const;
  // Whether a committed record expiring at expiry_ms (absolute, server
  // clock) must be treated as absent now.
  bool Expired(uint64_t expiry_ms) const;
  // Milliseconds left before Expired(expiry_ms) turns true (>= 1 while it
  // is false; 0 once it is).
  int64_t RemainingMs(uint64_t expiry_ms) const;

 private:
  bool have_ = false;
  int64_t local_ms_ = 0;    // local time of the sample's middle
  uint64_t server_ms_ = 0;  // server's clock estimated then
  uint64_t error_ms_ = 0;   // the sample's error then
  uint64_t AgedError(int64_t now_local) const;
};

}  // namespace kv

#endif  // KV_CLIENT_SRC_SERVER_CLOCK_H_
