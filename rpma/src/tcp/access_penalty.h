// Slowing down peers that probe for memory: every remote access error a
// peer address causes on this process's tcp targets (a bad rkey, an
// address outside a region, a region of another connection or below its
// floor) makes that address's next connection requests wait before they
// are delivered to the application's listener. An attacker guessing
// rkeys loses its QP at the first wrong guess (RC), so guessing costs one
// connection per try; the penalty makes every further try slower:
// kBaseMs after the first error, doubling with each error up to kCapMs,
// and requests of one address are delivered one per penalty (parallel
// connects queue up behind each other). kQuietMs after an address's last
// error it is forgiven. An address that never causes an error is never
// delayed (one map look-up per connection request, nothing on the data
// path).
//
// Thread-safe. Process-wide (all tcp devices and Pds of the process).
#ifndef RPMA_TCP_ACCESS_PENALTY_H_
#define RPMA_TCP_ACCESS_PENALTY_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace rpma::prov::tcp {

// The numbers, in one place.
struct PenaltyPolicy {
  static constexpr int64_t kBaseMs = 100;        // after the first error
  static constexpr int64_t kCapMs = 2000;        // doubling stops here
  static constexpr int64_t kQuietMs = 30000;     // forgiven after this long
  static constexpr int64_t kMaxHoldMs = 10000;   // beyond: rejected at once
  static constexpr size_t kMaxAddresses = 4096;  // tracked at most
};

class AccessPenalty {
 public:
  static AccessPenalty& Global();

  // A remote access error caused by `ip` (a numeric host, no port).
  void RecordError(const std::string& ip, int64_t now_ms);
  // The penalty per request of `ip` now (0: none).
  int64_t PenaltyMs(const std::string& ip, int64_t now_ms);
  // A connection request of `ip` arrived at now_ms: when it may be
  // delivered (now_ms when the address has no penalty), or -1 when it
  // would wait beyond kMaxHoldMs (the caller rejects it).
  int64_t DeliveryTime(const std::string& ip, int64_t now_ms);
  // Errors counted for `ip` (tests).
  uint32_t errors(const std::string& ip);
  void Clear();  // tests

 private:
  struct Entry {
    uint32_t errors = 0;
    int64_t last_error_ms = 0;
    int64_t next_delivery_ms = 0;  // the last held request's turn
  };
  // Drops forgiven entries; caller holds mu_.
  void ExpireLocked(int64_t now_ms);
  Entry* FindLocked(const std::string& ip, int64_t now_ms);
  static int64_t Penalty(uint32_t errors);

  std::mutex mu_;
  std::unordered_map<std::string, Entry> map_;
};

// The numeric address of fd's peer ("" if unknown).
std::string PeerIp(int fd);

}  // namespace rpma::prov::tcp

#endif  // RPMA_TCP_ACCESS_PENALTY_H_
