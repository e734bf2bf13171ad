// Progress — a one-line progress bar on stderr (done/total, rate, ETA),
// drawn only when stderr is a terminal and at most five times a second.
// Thread-safety: one thread.
#ifndef KV_TOOLS_KVADMIN_PROGRESS_H_
#define KV_TOOLS_KVADMIN_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace kv::kvadmin {

class Progress {
 public:
  // `what` names the phase ("reading index"), `total` the units expected.
  Progress(std::string what, uint64_t total);
  ~Progress();  // clears the line
  // Starts the next phase: a new label, total and rate.
  void Phase(std::string what, uint64_t total);
  void Add(uint64_t n) {
    done_ += n;
    if (enabled_ && (done_ & 0xfff) == 0) MaybeDraw();
  }

 private:
  using Clock = std::chrono::steady_clock;
  void MaybeDraw();
  std::string what_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_;
};

}  // namespace kv::kvadmin

#endif  // KV_TOOLS_KVADMIN_PROGRESS_H_
