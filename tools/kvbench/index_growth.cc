// kvbench_index_growth — what an online index growth costs: the pause a
// growth puts on commits, and gets during it.
//
//   kvbench_index_growth --dir=/tmp --keys=2000000 --value_size=16
//
// Creates a pool file in DIR with one keyspace whose index starts at one
// bucket, loads --keys keys through a store Writer (each put durable: one
// msync per put on a file pool), and for every growth prints the bucket
// count it reached, the keys then, and the latency of the put that ran it
// (the pause: commits wait for the copy) beside the median put; a reader
// thread meanwhile gets random loaded keys and reports its slowest get and
// any miss (there must be none: gets never wait for a growth).
// Exit status: 0 ok, 1 a get missed a key or a put failed, 2 usage, 3 the
// pool could not be made.
#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kv/store/keyspace.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "kv/tools/flags.h"

DEFINE_string(dir, ".", "directory for the pool file (removed at the end)");
DEFINE_uint64(keys, 2000000, "keys to load");
DEFINE_uint32(value_size, 16, "value bytes");

namespace {

using Clock = std::chrono::steady_clock;

double Us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

std::string Key(uint64_t i) { return "key:" + std::to_string(i); }

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = kv::tools::ParseFlags(
          &argc, &argv,
          {.name = "kvbench_index_growth",
           .usage = "kvbench_index_growth [--dir=DIR] [--keys=N] "
                    "[--value_size=N]\nThe pause an online index growth "
                    "puts on commits (tools/kvbench/README.md).\nExit "
                    "status: 0 ok, 1 a get missed or a put failed, 2 usage, "
                    "3 the pool could not be made."})) {
    return *rc;
  }
  if (argc > 1 || FLAGS_keys == 0 || FLAGS_value_size > 4096) {
    std::fprintf(stderr,
                 "kvbench_index_growth: bad arguments (see --help): --keys "
                 "> 0, --value_size <= 4096\n");
    return 2;
  }
  namespace ks = kv::store;
  const std::string path = FLAGS_dir + "/kvbench_index_growth.pool";
  // Records of 64..128 bytes, the index at ~32 bytes a key, and room.
  const uint64_t need = FLAGS_keys * (192 + FLAGS_value_size) + (256u << 20);
  const uint64_t size = (need + (1u << 20) - 1) / (1u << 20) * (1u << 20);
  unlink(path.c_str());
  auto pool = ks::Pool::Create(path, size);
  if (!pool.ok()) {
    std::fprintf(stderr, "kvbench_index_growth: %s\n",
                 pool.status().ToString().c_str());
    return 3;
  }
  ks::KeyspaceOptions o;
  o.index_capacity = 4;
  o.log_size = size - (64u << 20);
  auto keyspace = (*pool)->CreateKeyspace("bench", o);
  if (!keyspace.ok()) {
    std::fprintf(stderr, "kvbench_index_growth: %s\n",
                 keyspace.status().ToString().c_str());
    return 3;
  }
  std::shared_ptr<ks::Keyspace> k = *keyspace;
  std::atomic<uint64_t> loaded{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> misses{0}, gets{0};
  std::atomic<double> slowest_get{0};
  std::thread reader([&] {
    std::mt19937_64 rng(1);
    std::string v;
    while (!stop.load()) {
      const uint64_t n = loaded.load();
      if (n == 0) continue;
      const auto t0 = Clock::now();
      const bool ok = k->Get(Key(rng() % n), &v).ok();
      const double us = Us(t0, Clock::now());
      if (!ok) misses.fetch_add(1);
      gets.fetch_add(1);
      if (us > slowest_get.load()) slowest_get.store(us);
    }
  });
  std::printf("%-8s %12s %12s %12s %14s %14s\n", "growth", "buckets", "keys",
              "pause ms", "put p50 us", "slowest get us");
  const std::string value(FLAGS_value_size, 'v');
  std::vector<double> lat;
  lat.reserve(FLAGS_keys);
  std::vector<double> since;  // put latencies since the last growth
  uint64_t growths = 0;
  int rc = 0;
  {
    ks::Writer w(k);
    for (uint64_t i = 0; i < FLAGS_keys; i++) {
      const auto t0 = Clock::now();
      auto r = w.Put(Key(i), value);
      const double us = Us(t0, Clock::now());
      if (!r.ok()) {
        std::fprintf(stderr, "kvbench_index_growth: put %llu: %s\n",
                     static_cast<unsigned long long>(i),
                     r.status().ToString().c_str());
        rc = 1;
        break;
      }
      loaded.store(i + 1);
      lat.push_back(us);
      const ks::KeyspaceStats st = k->Stats();
      if (st.index_growths != growths) {
        growths = st.index_growths;
        std::sort(since.begin(), since.end());
        const double p50 = since.empty() ? 0 : since[since.size() / 2];
        std::printf("%-8llu %12llu %12llu %12.2f %14.1f %14.1f\n",
                    static_cast<unsigned long long>(growths),
                    static_cast<unsigned long long>(st.index_buckets),
                    static_cast<unsigned long long>(i + 1), us / 1000.0, p50,
                    slowest_get.exchange(0));
        std::fflush(stdout);
        since.clear();
      } else {
        since.push_back(us);
      }
    }
  }
  stop.store(true);
  reader.join();
  std::sort(lat.begin(), lat.end());
  std::printf(
      "%llu puts, p50 %.1f us, p99 %.1f us; %llu gets during the load, %llu "
      "missed\n",
      static_cast<unsigned long long>(lat.size()),
      lat.empty() ? 0 : lat[lat.size() / 2],
      lat.empty() ? 0 : lat[lat.size() * 99 / 100],
      static_cast<unsigned long long>(gets.load()),
      static_cast<unsigned long long>(misses.load()));
  if (misses.load() != 0) rc = 1;
  k.reset();
  pool->reset();
  unlink(path.c_str());
  return rc;
}
