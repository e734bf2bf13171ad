// Skewed integer generators of YCSB's core workloads, written from the
// published algorithms (Gray et al., "Quickly Generating Billion-Record
// Synthetic Databases", SIGMOD 1994, as YCSB's ZipfianGenerator uses it):
//
//   ZipfianGenerator  ranks 0..n-1, P(rank i) proportional to 1/(i+1)^theta;
//                     rank 0 is the most popular. n may grow (inserts):
//                     zeta(n) is extended term by term, never recomputed.
//   Scramble()        spreads ranks over the key space (FNV-1a of the rank,
//                     modulo n) so that popular keys are not neighbours —
//                     YCSB's "scrambled zipfian".
//
// Thread-safety: a generator is a value; give each thread its own copy.
#ifndef RPKV_TOOLS_KVBENCH_ZIPFIAN_H_
#define RPKV_TOOLS_KVBENCH_ZIPFIAN_H_

#include <cstdint>

namespace kvbench {

class ZipfianGenerator {
 public:
  static constexpr double kDefaultTheta = 0.99;  // YCSB's zipfian constant

  // Precondition: items >= 1, 0 < theta < 1 (validated by the caller; the
  // formula divides by 1 - theta). Costs O(items) pow() calls once.
  explicit ZipfianGenerator(uint64_t items, double theta = kDefaultTheta);

  // The rank for a uniform draw u in [0, 1): in [0, items()).
  uint64_t Next(double u) const;

  // Extends the range to `items` (no-op when not larger); O(new - old).
  void Grow(uint64_t items);

  uint64_t items() const { return items_; }
  double theta() const { return theta_; }

 private:
  void UpdateEta();

  uint64_t items_;
  double theta_;
  double alpha_;  // 1 / (1 - theta)
  double zeta2_;  // zeta(2, theta)
  double zetan_;  // zeta(items, theta)
  double eta_;
};

// FNV-1a (64-bit) of the rank's 8 bytes, modulo n: a fixed permutation-like
// map from popularity rank to key index. Precondition: n >= 1.
uint64_t Scramble(uint64_t rank, uint64_t n);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_ZIPFIAN_H_
