#include "bench_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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

Figures MsyncFloor(const std::string& dir, int threads, uint64_t ops) {
  constexpr uint64_t kRecord = 128;
  constexpr uint64_t kPage = 4096;
  const std::string path = dir + "/msync-floor";
  const uint64_t per_thread = (ops + threads - 1) / threads;
  const uint64_t region = (per_thread * kRecord + kPage - 1) / kPage * kPage;
  const size_t size = static_cast<size_t>(region * threads);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return {};
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    close(fd);
    return {};
  }
  auto* base = static_cast<uint8_t*>(map);
  // Each thread appends 128-byte records to its own region of a sparse
  // file and msyncs the page holding the new one: a log append, as small
  // as a durable put can be.
  Figures f = RunTimed(threads, ops, [&](int t, uint64_t i) {
    uint8_t* rec = base + t * region + i * kRecord;
    std::memset(rec, static_cast<int>(i + 1), kRecord);
    auto* page = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(rec) /
                                            kPage * kPage);
    return msync(page, kPage, MS_SYNC) == 0;
  });
  munmap(map, size);
  close(fd);
  unlink(path.c_str());
  return f;
}

}  // namespace kv::storebench
