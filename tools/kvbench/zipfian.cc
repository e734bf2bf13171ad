#include "zipfian.h"

#include <cmath>

namespace kvbench {

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta)
    : items_(0),
      theta_(theta),
      alpha_(1.0 / (1.0 - theta)),
      zeta2_(1.0 + std::pow(0.5, theta)),
      zetan_(0) {
  Grow(items < 1 ? 1 : items);
}

void ZipfianGenerator::Grow(uint64_t items) {
  if (items <= items_) return;
  // zeta(n) = sum_{i=1..n} 1/i^theta; extending it keeps a growing key
  // space (workload D's inserts) O(1) amortized per insert.
  for (uint64_t i = items_ + 1; i <= items; i++) {
    zetan_ += 1.0 / std::pow(static_cast<double>(i), theta_);
  }
  items_ = items;
  UpdateEta();
}

void ZipfianGenerator::UpdateEta() {
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) /
         (1.0 - zeta2_ / zetan_);
}

uint64_t ZipfianGenerator::Next(double u) const {
  // Gray et al.: the two most popular ranks are placed exactly, the rest by
  // inverting the continuous approximation of the CDF.
  double uz = u * zetan_;
  if (uz < 1.0 || items_ == 1) return 0;
  if (uz < zeta2_) return 1;
  double r =
      static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  uint64_t rank = static_cast<uint64_t>(r);
  return rank >= items_ ? items_ - 1 : rank;
}

uint64_t Scramble(uint64_t rank, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  for (int i = 0; i < 8; i++) {
    h ^= (rank >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;  // FNV prime
  }
  return h % n;
}

}  // namespace kvbench
