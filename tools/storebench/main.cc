// storebench — rpkv store vs RocksDB, same machine, same run.
//
// Two pairings, as issue 5 asks:
//   durable:    rpkv on a regular file (page granularity: each put persists
//               record + slot with one msync)  vs  RocksDB with sync=true,
//               beside the floor of this file system (a 128-byte log
//               append and one msync of its page), which bounds any
//               durable put here
//   cache line: rpkv with PMEM2_FORCE_GRANULARITY=CACHE_LINE (flush +
//               fence, what a DAX device costs)  vs  RocksDB defaults
// Gets are measured on a preloaded key set in both engines (RocksDB flushed
// to SST first). 16-byte keys, 100-byte values; 1 and 2 threads.
#include <gflags/gflags.h>
#include <rocksdb/db.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "kv/crc32c.h"
#include "kv/store/pool.h"
#include "kv/store/writer.h"
#include "kv/tools/flags.h"

DEFINE_string(dir, "/tmp/storebench", "scratch directory (wiped)");
DEFINE_uint64(keys, 200000, "keys preloaded for the get phase");
DEFINE_uint64(ops, 400000, "operations per fast phase (cache-line puts, gets)");
DEFINE_uint64(sync_ops, 20000, "operations per durable put phase");
DEFINE_uint64(value_size, 100, "value bytes");
DEFINE_string(threads, "1,2", "thread counts to run");

namespace {

using kv::storebench::Figures;
using kv::storebench::Key;
using kv::storebench::RunTimed;
using kv::storebench::Value;

void Die(const std::string& what) {
  fprintf(stderr, "storebench: %s\n", what.c_str());
  exit(1);
}

struct Rpkv {
  std::unique_ptr<kv::store::Pool> pool;
  std::shared_ptr<kv::store::Keyspace> ks;
  std::vector<std::unique_ptr<kv::store::Writer>> writers;
};

Rpkv OpenRpkv(const std::string& path, bool cache_line, int max_threads) {
  if (cache_line) setenv("PMEM2_FORCE_GRANULARITY", "CACHE_LINE", 1);
  auto pool = kv::store::Pool::Create(path, 4ull << 30);
  unsetenv("PMEM2_FORCE_GRANULARITY");
  if (!pool.ok()) Die(pool.status().ToString());
  kv::store::KeyspaceOptions o;
  o.index_capacity = std::max<uint64_t>(FLAGS_keys, FLAGS_sync_ops) * 2;
  o.segment_size = 4 << 20;
  o.log_size = 2ull << 30;
  auto ks = (*pool)->CreateKeyspace("bench", o);
  if (!ks.ok()) Die(ks.status().ToString());
  Rpkv r;
  r.ks = *ks;
  r.pool = std::move(*pool);
  for (int t = 0; t < max_threads; t++) {
    r.writers.push_back(std::make_unique<kv::store::Writer>(r.ks));
  }
  return r;
}

std::unique_ptr<rocksdb::DB> OpenRocks(const std::string& path) {
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, path, &db);
  if (!s.ok()) Die("rocksdb: " + s.ToString());
  return std::unique_ptr<rocksdb::DB>(db);
}

void Print(const char* engine, const char* op, int threads, const Figures& f) {
  printf("%-34s %-16s %2d %12.0f %9.2f %9.2f%s\n", engine, op, threads,
         f.ops_per_sec, f.p50_us, f.p99_us,
         f.errors ? ("  ERRORS " + std::to_string(f.errors)).c_str() : "");
  fflush(stdout);
}

void Ratio(const char* what, const Figures& ours, const Figures& theirs) {
  printf("  ratio %-40s %6.2fx throughput, p50 %6.2fx lower\n", what,
         ours.ops_per_sec / theirs.ops_per_sec,
         ours.p50_us > 0 ? theirs.p50_us / ours.p50_us : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  if (auto rc = kv::tools::ParseFlags(
          &argc, &argv,
          {.name = "storebench",
           .usage = "storebench — rpkv store vs RocksDB, same machine, same "
                    "run (see store/README.md)\n\nusage: storebench "
                    "[flags]\n"})) {
    return *rc;
  }
  if (argc > 1) {
    fprintf(stderr, "storebench: unexpected argument '%s' (see --help)\n",
            argv[1]);
    return kv::tools::kExitUsage;
  }
  std::vector<int> thread_counts;
  for (size_t p = 0; p < FLAGS_threads.size();) {
    size_t q = FLAGS_threads.find(',', p);
    if (q == std::string::npos) q = FLAGS_threads.size();
    thread_counts.push_back(std::stoi(FLAGS_threads.substr(p, q - p)));
    p = q + 1;
  }
  int max_threads = 1;
  for (int t : thread_counts) max_threads = std::max(max_threads, t);
  std::filesystem::remove_all(FLAGS_dir);
  std::filesystem::create_directories(FLAGS_dir);
  const size_t vs = FLAGS_value_size;
  printf(
      "storebench: keys 16 B, values %zu B, crc32c %s, %u hardware threads\n",
      vs, kv::Crc32cIsHardwareAccelerated() ? "hardware" : "software",
      std::thread::hardware_concurrency());
  printf("%-34s %-16s %2s %12s %9s %9s\n", "engine", "op", "th", "ops/s",
         "p50 us", "p99 us");

  for (int threads : thread_counts) {
    // --- durable puts: rpkv page granularity (msync) vs RocksDB sync=true.
    const std::string tag = std::to_string(threads);
    Rpkv file = OpenRpkv(FLAGS_dir + "/file" + tag + ".pool", false, threads);
    auto db_sync = OpenRocks(FLAGS_dir + "/rocks-sync" + tag);
    rocksdb::WriteOptions sync;
    sync.sync = true;
    Figures a = RunTimed(threads, FLAGS_sync_ops, [&](int t, uint64_t i) {
      const uint64_t k = i * threads + t;
      return file.writers[t]->Put(Key(k), Value(k, vs)).ok();
    });
    Print("rpkv file (page, msync)", "durable put", threads, a);
    Figures b = RunTimed(threads, FLAGS_sync_ops, [&](int t, uint64_t i) {
      const uint64_t k = i * threads + t;
      return db_sync->Put(sync, Key(k), Value(k, vs)).ok();
    });
    Print("rocksdb sync=true", "durable put", threads, b);
    Figures floor =
        kv::storebench::MsyncFloor(FLAGS_dir, threads, FLAGS_sync_ops);
    Print("floor: 128 B append + msync", "durable write", threads, floor);
    Ratio("durable put (rpkv page / rocksdb sync)", a, b);
    Ratio("ceiling: floor / rocksdb sync", floor, b);
    file = Rpkv{};
    db_sync.reset();

    // --- cache-line mode vs RocksDB defaults: puts, then gets.
    Rpkv cl = OpenRpkv(FLAGS_dir + "/cl" + tag + ".pool", true, threads);
    if (cl.pool->Info().granularity != "cache line") {
      Die("PMEM2_FORCE_GRANULARITY=CACHE_LINE was not honoured");
    }
    auto db = OpenRocks(FLAGS_dir + "/rocks" + tag);
    rocksdb::WriteOptions def;
    Figures c = RunTimed(threads, FLAGS_keys, [&](int t, uint64_t i) {
      const uint64_t k = i * threads + t;
      return cl.writers[t]->Put(Key(k), Value(k, vs)).ok();
    });
    Print("rpkv cache-line (forced)", "put (load)", threads, c);
    Figures d = RunTimed(threads, FLAGS_keys, [&](int t, uint64_t i) {
      const uint64_t k = i * threads + t;
      return db->Put(def, Key(k), Value(k, vs)).ok();
    });
    Print("rocksdb default (no sync)", "put (load)", threads, d);
    Ratio("put (rpkv cache-line / rocksdb default)", c, d);
    if (!db->Flush(rocksdb::FlushOptions()).ok()) Die("rocksdb flush failed");

    const uint64_t nkeys = FLAGS_keys / threads * threads;
    std::vector<std::mt19937_64> rngs;
    for (int t = 0; t < threads; t++) rngs.emplace_back(1234 + t);
    std::vector<std::string> bufs(threads);
    Figures e = RunTimed(threads, FLAGS_ops, [&](int t, uint64_t) {
      const uint64_t k = rngs[t]() % nkeys;
      return cl.ks->Get(Key(k), &bufs[t]).ok() && bufs[t].size() == vs;
    });
    Print("rpkv (lock-free, CRC-checked)", "get", threads, e);
    Figures f = RunTimed(threads, FLAGS_ops, [&](int t, uint64_t) {
      const uint64_t k = rngs[t]() % nkeys;
      return db->Get(rocksdb::ReadOptions(), Key(k), &bufs[t]).ok() &&
             bufs[t].size() == vs;
    });
    Print("rocksdb (flushed to SST)", "get", threads, f);
    Ratio("get (rpkv / rocksdb)", e, f);
    cl = Rpkv{};
    db.reset();
  }
  std::filesystem::remove_all(FLAGS_dir);
  return 0;
}
