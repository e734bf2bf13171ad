#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace kv::storebench {

Figures RunTimed(int threads, uint64_t ops,
                 const std::function<bool(int, uint64_t)>& op) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::vector<uint32_t>> lat(threads);  // nanoseconds
  std::vector<uint64_t> errors(threads, 0);
  const uint64_t per = ops / threads;
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++) {
    pool.emplace_back([&, t] {
      lat[t].reserve(per);
      for (uint64_t i = 0; i < per; i++) {
        const auto a = Clock::now();
        if (!op(t, i)) errors[t]++;
        const auto b = Clock::now();
        lat[t].push_back(static_cast<uint32_t>(std::min<int64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count(),
            UINT32_MAX)));
      }
    });
  }
  for (auto& th : pool) th.join();
  const double secs =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<uint32_t> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  Figures f;
  f.ops = all.size();
  for (uint64_t e : errors) f.errors += e;
  f.ops_per_sec = secs > 0 ? f.ops / secs : 0;
  if (!all.empty()) {
    f.p50_us = all[all.size() / 2] / 1000.0;
    f.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)] / 1000.0;
  }
  return f;
}

std::string Key(uint64_t i) {
  char buf[32];
  snprintf(buf, sizeof(buf), "user%012llu", static_cast<unsigned long long>(i));
  return buf;
}

std::string Value(uint64_t i, size_t size) {
  std::string v(size, 'v');
  const std::string tag = std::to_string(i);
  v.replace(0, std::min(tag.size(), size), tag.substr(0, size));
  return v;
}

}  // namespace kv::storebench
