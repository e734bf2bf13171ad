#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace kv::kvadmin {

Progress::Progress(std::string what, uint64_t total)
    : what_(std::move(what)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_(start_) {}

Progress::~Progress() {
  if (enabled_ && last_ != start_) fprintf(stderr, "\r\033[K");
}

void Progress::Phase(std::string what, uint64_t total) {
  what_ = std::move(what);
  total_ = total;
  done_ = 0;
  start_ = Clock::now();
  last_ = start_ - std::chrono::seconds(1);  // draw the new label at once
  if (enabled_) MaybeDraw();
}

void Progress::MaybeDraw() {
  const auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? done_ / secs : 0;
  char eta[32] = "";
  if (total_ > done_ && rate > 0) {
    const auto left = static_cast<uint64_t>((total_ - done_) / rate);
    snprintf(eta, sizeof(eta), ", ETA %llu:%02llu",
             static_cast<unsigned long long>(left / 60),
             static_cast<unsigned long long>(left % 60));
  }
  const int pct = total_ ? static_cast<int>(100.0 * done_ / total_) : 0;
  constexpr int kWidth = 24;
  const int fill = total_ ? kWidth * pct / 100 : 0;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; i++) bar[i] = i < fill ? '#' : '.';
  bar[kWidth] = 0;
  fprintf(stderr, "\r\033[K%s [%s] %llu/%llu keys (%d%%), %.0fk/s%s",
          what_.c_str(), bar, static_cast<unsigned long long>(done_),
          static_cast<unsigned long long>(total_), pct > 100 ? 100 : pct,
          rate / 1000, eta);
  fflush(stderr);
}

}  // namespace kv::kvadmin
