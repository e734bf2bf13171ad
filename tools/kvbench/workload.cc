#include "workload.h"

#include <charconv>
#include <cmath>

#include "value.h"

namespace kvbench {

std::string_view OpName(OpType op) {
  switch (op) {
    case OpType::kRead:
      return "read";
    case OpType::kUpdate:
      return "update";
    case OpType::kInsert:
      return "insert";
    case OpType::kDelete:
      return "delete";
    case OpType::kRmw:
      return "rmw";
  }
  return "unknown";
}

std::string_view DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kZipfian:
      return "zipfian";
    case Distribution::kLatest:
      return "latest";
  }
  return "unknown";
}

kv::Result<Distribution> ParseDistribution(std::string_view text) {
  if (text == "uniform") return Distribution::kUniform;
  if (text == "zipfian") return Distribution::kZipfian;
  if (text == "latest") return Distribution::kLatest;
  return kv::Status::InvalidArgument("--distribution='" + std::string(text) +
                                     "': expected uniform, zipfian or latest");
}

namespace {

bool ParseSize(std::string_view text, size_t* out) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

size_t Digits(uint64_t v) {
  size_t d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

}  // namespace

kv::Status ParseValueSize(std::string_view text, size_t* min, size_t* max) {
  size_t colon = text.find(':');
  bool ok = colon == std::string_view::npos
                ? ParseSize(text, min)
                : ParseSize(text.substr(0, colon), min) &&
                      ParseSize(text.substr(colon + 1), max);
  if (!ok) {
    return kv::Status::InvalidArgument(
        "--value_size='" + std::string(text) +
        "': expected a byte count (64) or a range (32:512)");
  }
  if (colon == std::string_view::npos) *max = *min;
  return kv::Status::Ok();
}

kv::Status ResolveWorkload(const std::array<double, kOpTypes>& custom,
                           bool distribution_given, WorkloadSpec* spec) {
  auto mix = [](double read, double update, double insert, double del,
                double rmw) {
    return std::array<double, kOpTypes>{read, update, insert, del, rmw};
  };
  Distribution natural = Distribution::kZipfian;
  const std::string& w = spec->name;
  if (w == "a") {
    spec->mix = mix(0.5, 0.5, 0, 0, 0);
  } else if (w == "b") {
    spec->mix = mix(0.95, 0.05, 0, 0, 0);
  } else if (w == "c") {
    spec->mix = mix(1, 0, 0, 0, 0);
  } else if (w == "d") {
    spec->mix = mix(0.95, 0, 0.05, 0, 0);
    natural = Distribution::kLatest;
  } else if (w == "f") {
    spec->mix = mix(0.5, 0, 0, 0, 0.5);
  } else if (w == "custom") {
    double sum = 0;
    for (double r : custom) {
      if (r < 0 || !std::isfinite(r)) {
        return kv::Status::InvalidArgument(
            "--workload=custom: ratios must not be negative");
      }
      sum += r;
    }
    if (std::fabs(sum - 1.0) > 1e-6) {
      return kv::Status::InvalidArgument(
          "--workload=custom: --read_ratio, --update_ratio, --insert_ratio, "
          "--delete_ratio and --rmw_ratio must add up to 1 (they add up to " +
          std::to_string(sum) + ")");
    }
    spec->mix = custom;
  } else {
    return kv::Status::InvalidArgument("--workload='" + w +
                                       "': expected a, b, c, d, f or custom");
  }
  if (!distribution_given) spec->distribution = natural;
  if (!(spec->zipfian_theta > 0 && spec->zipfian_theta < 1)) {
    return kv::Status::InvalidArgument(
        "--zipfian_theta must be in (0, 1) (YCSB uses 0.99)");
  }
  if (spec->keys < 1) {
    return kv::Status::InvalidArgument("--keys must be at least 1");
  }
  // Room for the ids of the loaded keys and a thousand times as many
  // inserts, so long insert-heavy runs never run out of digits.
  size_t need = 1 + Digits(spec->keys) + 3;
  if (spec->key_size < need || spec->key_size > 1024) {
    return kv::Status::InvalidArgument(
        "--key_size=" + std::to_string(spec->key_size) + " must be in [" +
        std::to_string(need) +
        ", 1024] for --keys=" + std::to_string(spec->keys));
  }
  if (spec->value_min < kMinValueSize || spec->value_max > (1u << 20) ||
      spec->value_min > spec->value_max) {
    return kv::Status::InvalidArgument(
        "--value_size: sizes must be in [" + std::to_string(kMinValueSize) +
        ", 1048576] bytes (values carry key id, version, length and a "
        "checksum) and min <= max");
  }
  return kv::Status::Ok();
}

void FormatKey(uint64_t id, size_t key_size, std::string* out) {
  out->assign(key_size, '0');
  (*out)[0] = 'k';
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, id);
  size_t n = static_cast<size_t>(end - digits);
  if (n > key_size - 1) n = key_size - 1;  // ResolveWorkload leaves room
  out->replace(key_size - n, n, digits, n);
}

void KeyCounter::Acknowledge(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t limit = limit_.load(std::memory_order_relaxed);
  if (id != limit) {
    done_above_limit_.insert(id);
    return;
  }
  limit++;
  while (!done_above_limit_.empty() && *done_above_limit_.begin() == limit) {
    done_above_limit_.erase(done_above_limit_.begin());
    limit++;
  }
  limit_.store(limit, std::memory_order_release);
}

KeyChooser::KeyChooser(const WorkloadSpec& spec,
                       const ZipfianGenerator& prototype)
    : distribution_(spec.distribution), zipf_(prototype) {}

uint64_t KeyChooser::Next(uint64_t limit, std::mt19937_64* rng) {
  if (limit <= 1) return 0;
  if (distribution_ == Distribution::kUniform) {
    return std::uniform_int_distribution<uint64_t>(0, limit - 1)(*rng);
  }
  zipf_.Grow(limit);
  double u = std::uniform_real_distribution<double>(0, 1)(*rng);
  // zipf_ may have grown past limit through an earlier, larger limit.
  uint64_t rank = zipf_.Next(u) % limit;
  if (distribution_ == Distribution::kLatest) {
    return limit - 1 - rank;  // the newest key is the most popular
  }
  return Scramble(rank, limit);
}

OpChooser::OpChooser(const WorkloadSpec& spec) {
  double sum = 0;
  for (size_t i = 0; i < kOpTypes; i++) {
    sum += spec.mix[i];
    cumulative_[i] = sum;
  }
}

OpType OpChooser::Next(std::mt19937_64* rng) {
  double u = std::uniform_real_distribution<double>(0, 1)(*rng) *
             cumulative_[kOpTypes - 1];
  for (size_t i = 0; i < kOpTypes; i++) {
    if (u < cumulative_[i]) return static_cast<OpType>(i);
  }
  for (size_t i = kOpTypes; i-- > 0;) {
    if (i == 0 || cumulative_[i] > cumulative_[i - 1]) {
      return static_cast<OpType>(i);
    }
  }
  return OpType::kRead;
}

size_t NextValueSize(const WorkloadSpec& spec, std::mt19937_64* rng) {
  if (spec.value_min == spec.value_max) return spec.value_min;
  return std::uniform_int_distribution<size_t>(spec.value_min,
                                               spec.value_max)(*rng);
}

}  // namespace kvbench
