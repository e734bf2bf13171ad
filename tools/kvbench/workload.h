// Workload: what kvbench asks of a backend — YCSB's core mixes (A, B, C,
// D, F) or a custom one, a key chooser (uniform, zipfian, latest), keys and
// value sizes. Keys are "k" + the key id in decimal, zero-padded to
// --key_size; ids 0..keys-1 exist after the load phase and inserts take
// the next ids.
//
// Thread-safety: a Workload and its KeyCounter are shared by all threads
// (the counter is internally synchronized); each thread owns its
// KeyChooser and random engine.
#ifndef RPKV_TOOLS_KVBENCH_WORKLOAD_H_
#define RPKV_TOOLS_KVBENCH_WORKLOAD_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>

#include "kv/status.h"
#include "zipfian.h"

namespace kvbench {

enum class OpType : uint8_t { kRead, kUpdate, kInsert, kDelete, kRmw };
inline constexpr size_t kOpTypes = 5;
// "read", "update", "insert", "delete", "rmw" (the JSON result keys).
std::string_view OpName(OpType op);

enum class Distribution : uint8_t { kUniform, kZipfian, kLatest };
std::string_view DistributionName(Distribution d);

struct WorkloadSpec {
  std::string name = "a";  // a|b|c|d|f|custom
  // Proportions, summing to 1 (index by OpType).
  std::array<double, kOpTypes> mix{};
  Distribution distribution = Distribution::kZipfian;
  double zipfian_theta = ZipfianGenerator::kDefaultTheta;
  uint64_t keys = 100000;
  size_t key_size = 16;
  size_t value_min = 64;
  size_t value_max = 64;
};

// Fills spec->mix and, unless `distribution_given`, spec->distribution
// from spec->name (YCSB: A 50/50 read/update, B 95/5, C read only,
// D 95/5 read/insert with "latest", F 50/50 read/read-modify-write; all
// zipfian but D). For "custom", `custom` holds the ratios.
// Errors: invalid_argument (unknown name; custom ratios negative or not
// summing to 1; sizes: key too short for the ids, value outside
// [kMinValueSize, 1 MiB] or min > max; theta outside (0, 1)).
kv::Status ResolveWorkload(const std::array<double, kOpTypes>& custom,
                           bool distribution_given, WorkloadSpec* spec);

// Parses "uniform" | "zipfian" | "latest". Errors: invalid_argument.
kv::Result<Distribution> ParseDistribution(std::string_view text);
// Parses "64" or "32:512" into [min, max]. Errors: invalid_argument.
kv::Status ParseValueSize(std::string_view text, size_t* min, size_t* max);

// The key of `id`: "k" + id zero-padded to `key_size` bytes.
void FormatKey(uint64_t id, size_t key_size, std::string* out);

// Key ids that exist: 0..limit()-1 are all present (loaded, or inserted
// and acknowledged). Inserts take ids in order but may complete out of
// order across threads; limit() only passes an id once every id below it
// completed, so a reader never picks a key still in flight.
class KeyCounter {
 public:
  explicit KeyCounter(uint64_t loaded) : next_(loaded), limit_(loaded) {}
  uint64_t Allocate() { return next_.fetch_add(1); }
  // Marks `id` (from Allocate) as present; a failed insert is acknowledged
  // too (the id is then absent: readers of it may see not_found).
  void Acknowledge(uint64_t id);
  uint64_t limit() const { return limit_.load(std::memory_order_acquire); }

 private:
  std::atomic<uint64_t> next_;
  std::atomic<uint64_t> limit_;
  std::mutex mu_;
  std::set<uint64_t> done_above_limit_;  // guarded by mu_
};

// Picks key ids in [0, counter.limit()) by the spec's distribution.
class KeyChooser {
 public:
  KeyChooser(const WorkloadSpec& spec, const ZipfianGenerator& prototype);
  uint64_t Next(uint64_t limit, std::mt19937_64* rng);

 private:
  Distribution distribution_;
  ZipfianGenerator zipf_;
};

// Draws operation types by the spec's mix.
class OpChooser {
 public:
  explicit OpChooser(const WorkloadSpec& spec);
  OpType Next(std::mt19937_64* rng);

 private:
  std::array<double, kOpTypes> cumulative_{};
};

// A value size in [spec.value_min, spec.value_max], uniformly.
size_t NextValueSize(const WorkloadSpec& spec, std::mt19937_64* rng);

}  // namespace kvbench

#endif  // RPKV_TOOLS_KVBENCH_WORKLOAD_H_
