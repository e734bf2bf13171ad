// kvadmin_fill — fills a pool with generated keys, for measuring kvadmin
// snapshot / verify / restore at scale (not an operator tool).
//
//   kvadmin_fill --pool=PATH --pool_size=4G --keys=10000000 [--value_size=16]
//                [--threads=2] [--keyspace=bench]
//
// Creates the pool and keyspace when missing (index sized for --keys).
// Puts use cache-line flushes (PMEM2_FORCE_GRANULARITY=CACHE_LINE: durable
// against process crashes only), which is what makes 10M puts quick on a
// regular file; the pool is closed cleanly at the end.
#include <gflags/gflags.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "commands.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"

DEFINE_string(pool, "", "pool file (created when missing)");
DEFINE_string(pool_size, "4G", "size of a new pool");
DEFINE_string(keyspace, "bench", "keyspace (created when missing)");
DEFINE_uint64(keys, 1000000, "keys to put: user000000000000, ...");
DEFINE_uint64(value_size, 16, "value bytes");
DEFINE_uint32(threads, 2, "writer threads");
DEFINE_string(segment_size, "4M", "segment size of a new keyspace");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  using namespace kv;
  if (FLAGS_pool.empty() || FLAGS_threads == 0) {
    fprintf(stderr, "kvadmin_fill: --pool=PATH and --threads>0 needed\n");
    return 2;
  }
  setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 0);
  Result<std::unique_ptr<store::Pool>> pool =
      std::filesystem::exists(FLAGS_pool)
          ? store::Pool::Open(FLAGS_pool)
          : store::Pool::Create(FLAGS_pool,
                                kvadmin::ParseSize(FLAGS_pool_size).value());
  if (!pool.ok()) {
    fprintf(stderr, "kvadmin_fill: %s\n", pool.status().ToString().c_str());
    return 1;
  }
  auto ks = (*pool)->GetKeyspace(FLAGS_keyspace);
  if (!ks.ok()) {
    store::KeyspaceOptions o;
    o.index_capacity = FLAGS_keys * 2;  // half-full buckets
    o.segment_size =
        static_cast<uint32_t>(kvadmin::ParseSize(FLAGS_segment_size).value());
    o.max_value_size = 64 << 10;
    ks = (*pool)->CreateKeyspace(FLAGS_keyspace, o);
  }
  if (!ks.ok()) {
    fprintf(stderr, "kvadmin_fill: %s\n", ks.status().ToString().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (uint32_t t = 0; t < FLAGS_threads; t++) {
    threads.emplace_back([&, t] {
      store::Writer w(*ks);
      const std::string value(FLAGS_value_size, 'v');
      char key[32];
      for (uint64_t i = t; i < FLAGS_keys; i += FLAGS_threads) {
        snprintf(key, sizeof(key), "user%012llu",
                 static_cast<unsigned long long>(i));
        auto r = w.Put(key, value);
        if (!r.ok()) {
          if (failed++ == 0) {
            fprintf(stderr, "kvadmin_fill: put %s: %s\n", key,
                    r.status().ToString().c_str());
          }
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  printf("kvadmin_fill: %llu keys of %llu bytes into %s/%s in %.1f s\n",
         static_cast<unsigned long long>(FLAGS_keys),
         static_cast<unsigned long long>(FLAGS_value_size), FLAGS_pool.c_str(),
         FLAGS_keyspace.c_str(), secs);
  ks->reset();
  return failed == 0 ? 0 : 1;
}
