// kvbench: YCSB-style workloads against rpkv (kv::Client) or Redis
// (hiredis), with the same operations in flight, latency percentiles,
// CPU time per operation, JSON and gnuplot output. See README.md.
//
// Exit status: 0 the run completed with no errors, 1 it completed with
// errors (counted in the results), 2 usage, 3 could not connect or load,
// 4 an output file could not be written or plotted.
#include <gflags/gflags.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "backend.h"
#include "kv/tools/flags.h"
#include "plot.h"
#include "report.h"
#include "runner.h"
#include "workload.h"

DEFINE_string(backend, "rpkv",
              "rpkv or redis (default redis when only "
              "--redis is given)");
DEFINE_string(server, "127.0.0.1:7400", "rpkv: kvserver address HOST:PORT");
DEFINE_string(keyspace, "default", "rpkv: keyspace to run in");
DEFINE_string(cluster, "",
              "rpkv: run against a cluster (etcd://HOST:PORT[,...], the etcd "
              "holding its map) instead of --server; --keyspace names a "
              "cluster keyspace");
DEFINE_string(cluster_name, "rpkv", "rpkv: the cluster's name in etcd");
DEFINE_bool(create, false,
            "rpkv: create the keyspace if missing (kvserver "
            "needs --allow_create)");
DEFINE_string(access_key, "", "rpkv: access key of the keyspace, if any");
DEFINE_string(wait, "adaptive",
              "rpkv: how the client waits for completions: poll (busy-poll "
              "the completion queue), block (sleep on its completion "
              "channel) or adaptive (poll --spin_us, then block; the client "
              "library's default)");
DEFINE_uint32(spin_us, 50, "rpkv: --wait=adaptive spins this long first");
DEFINE_string(redis, "127.0.0.1:6379", "redis: redis-server address");
DEFINE_string(workload, "a",
              "a (50/50 read/update), b (95/5), c (read "
              "only), d (95/5 read/insert, latest), f (50/50 "
              "read/read-modify-write) or custom (the *_ratio flags)");
DEFINE_double(read_ratio, 0, "custom: fraction of reads");
DEFINE_double(update_ratio, 0, "custom: fraction of updates");
DEFINE_double(insert_ratio, 0, "custom: fraction of inserts (new keys)");
DEFINE_double(delete_ratio, 0,
              "custom: fraction of deletes (reads may then "
              "find no key: counted as not_found, not as errors)");
DEFINE_double(rmw_ratio, 0, "custom: fraction of read-modify-writes");
DEFINE_string(distribution, "zipfian",
              "key chooser: uniform, zipfian or "
              "latest (default: zipfian; latest for workload d)");
DEFINE_double(zipfian_theta, 0.99, "zipfian constant, in (0, 1)");
DEFINE_uint64(keys, 100000, "keys written by the load phase");
DEFINE_uint64(key_size, 16, "key length in bytes");
DEFINE_string(value_size, "64",
              "value length in bytes, or MIN:MAX "
              "(uniform); at least 20 (values are self-checking)");
DEFINE_uint32(threads, 1, "threads, each with its own connection");
DEFINE_uint32(qd, 1,
              "operations in flight per connection (kv::Batch on "
              "rpkv, pipelining on Redis)");
DEFINE_double(duration, 10, "measured seconds (unless --ops)");
DEFINE_uint64(ops, 0, "measured operations in total (0: use --duration)");
DEFINE_double(warmup, 1, "seconds of the workload before measuring");
DEFINE_bool(load, true,
            "write every key once before the run (off: the "
            "keys of an earlier run with the same --keys are used)");
DEFINE_bool(progress, true,
            "a progress line on stderr when it is a "
            "terminal");
DEFINE_int32(server_pid, 0,
             "pid of the server process on this machine: "
             "its CPU time per operation is reported too");
DEFINE_uint32(pings, 1000,
              "round trips (rpkv INFO ping, Redis PING) timed on one idle "
              "connection before the run: the latency floor");
DEFINE_string(json, "", "write every figure and the configuration to FILE");
DEFINE_string(plot, "",
              "render the latency CDF to FILE.svg with gnuplot "
              "(data in FILE.svg.dat)");
DEFINE_string(plot_data, "", "write the latency CDF as gnuplot data to FILE");
DEFINE_string(plot_spec, "",
              "no benchmark: render --plot from a plot spec "
              "(compare_redis.sh writes one; see plot.h)");
DEFINE_string(timeline, "",
              "write throughput and latency per --timeline_ms interval of "
              "the measured run to FILE (CSV)");
DEFINE_uint32(timeline_ms, 100, "width of a --timeline interval, 1..60000");
DEFINE_string(label, "", "free text stored in the JSON config");
DEFINE_uint64(seed, 1, "random seed (threads derive theirs)");

namespace {

constexpr const char* kUsage =
    "YCSB-style workloads on rpkv or Redis, side by side.\n\n"
    "  kvbench --server=127.0.0.1:7400 --keyspace=bench --create \\\n"
    "          --workload=b --threads=2 --qd=8 --duration=10 --json=b.json\n"
    "  kvbench --backend=redis --redis=127.0.0.1:6379 --workload=b ...\n"
    "  kvbench --plot=cmp.svg --plot_spec=cmp.spec   (render only)\n\n"
    "Exit: 0 ok, 1 the run counted errors, 2 usage, 3 connect/load failed, "
    "4 output failed.";

int UsageError(const std::string& why) {
  std::fprintf(stderr, "kvbench: %s (see --help)\n", why.c_str());
  return 2;
}

bool IsDefault(const char* flag) {
  return gflags::GetCommandLineFlagInfoOrDie(flag).is_default;
}

}  // namespace

int main(int argc, char** argv) {
  // --help: usage and kvbench's own flags; an unknown flag or bad value is
  // a usage error (2), not gflags' exit 1.
  if (auto rc = kv::tools::ParseFlags(&argc, &argv,
                                      {.name = "kvbench", .usage = kUsage})) {
    return *rc;
  }
  if (argc > 1)
    return UsageError("unexpected argument '" + std::string(argv[1]) + "'");

  if (!FLAGS_plot_spec.empty()) {
    if (FLAGS_plot.empty())
      return UsageError("--plot_spec needs --plot=FILE.svg");
    std::vector<kvbench::PlotPanel> panels;
    kv::Status st = kvbench::ParsePlotSpec(FLAGS_plot_spec, &panels);
    if (st.ok()) st = kvbench::RenderPlot(FLAGS_plot, panels);
    if (!st.ok()) {
      std::fprintf(stderr, "kvbench: %s\n", st.ToString().c_str());
      return st.IsInvalidArgument() ? 2 : 4;
    }
    return 0;
  }

  std::string backend = FLAGS_backend;
  if (IsDefault("backend") && !IsDefault("redis")) backend = "redis";
  if (backend != "rpkv" && backend != "redis") {
    return UsageError("--backend must be rpkv or redis");
  }
  if (FLAGS_wait != "poll" && FLAGS_wait != "block" &&
      FLAGS_wait != "adaptive") {
    return UsageError("--wait must be poll, block or adaptive");
  }
  if (FLAGS_threads < 1 || FLAGS_threads > 1024) {
    return UsageError("--threads must be in [1, 1024]");
  }
  if (FLAGS_qd < 1 || FLAGS_qd > 4096) {
    return UsageError("--qd must be in [1, 4096]");
  }
  if (FLAGS_ops == 0 && !(FLAGS_duration > 0)) {
    return UsageError("--duration must be positive (or give --ops)");
  }
  if (!(FLAGS_warmup >= 0)) return UsageError("--warmup must be >= 0");
  if (FLAGS_timeline_ms < 1 || FLAGS_timeline_ms > 60000) {
    return UsageError("--timeline_ms must be in [1, 60000]");
  }

  kvbench::RunConfig config;
  kvbench::WorkloadSpec& spec = config.spec;
  spec.name = FLAGS_workload;
  spec.zipfian_theta = FLAGS_zipfian_theta;
  spec.keys = FLAGS_keys;
  spec.key_size = FLAGS_key_size;
  auto dist = kvbench::ParseDistribution(FLAGS_distribution);
  if (!dist.ok()) return UsageError(dist.status().message());
  spec.distribution = *dist;
  kv::Status st = kvbench::ParseValueSize(FLAGS_value_size, &spec.value_min,
                                          &spec.value_max);
  if (st.ok()) {
    st = kvbench::ResolveWorkload(
        {FLAGS_read_ratio, FLAGS_update_ratio, FLAGS_insert_ratio,
         FLAGS_delete_ratio, FLAGS_rmw_ratio},
        !IsDefault("distribution"), &spec);
  }
  if (!st.ok()) return UsageError(st.message());
  config.threads = FLAGS_threads;
  config.qd = FLAGS_qd;
  config.duration_s = FLAGS_duration;
  config.ops = FLAGS_ops;
  config.warmup_s = FLAGS_warmup;
  config.load = FLAGS_load;
  config.progress = FLAGS_progress && isatty(STDERR_FILENO);
  config.server_pid = FLAGS_server_pid;
  config.pings = FLAGS_pings;
  config.seed = FLAGS_seed;
  if (!FLAGS_timeline.empty()) config.timeline_ms = FLAGS_timeline_ms;

  kvbench::Report report;
  report.backend = backend;
  report.label = FLAGS_label;
  std::unique_ptr<kvbench::BackendFactory> factory;
  if (backend == "rpkv") {
    factory = kvbench::MakeRpkvFactory({.server = FLAGS_server,
                                        .cluster = FLAGS_cluster,
                                        .cluster_name = FLAGS_cluster_name,
                                        .keyspace = FLAGS_keyspace,
                                        .access_key = FLAGS_access_key,
                                        .create = FLAGS_create,
                                        .wait = FLAGS_wait,
                                        .spin_us = FLAGS_spin_us,
                                        .qd = FLAGS_qd});
    report.server = FLAGS_cluster.empty() ? FLAGS_server : FLAGS_cluster;
    report.keyspace = FLAGS_keyspace;
    report.wait = FLAGS_wait;
    if (FLAGS_wait == "adaptive") {
      report.wait += " (spin " + std::to_string(FLAGS_spin_us) + " us)";
    }
  } else {
    factory = kvbench::MakeRedisFactory({.server = FLAGS_redis});
    report.server = FLAGS_redis;
  }

  auto facts = factory->Describe();
  if (!facts.ok()) {
    std::fprintf(stderr, "kvbench: %s\n", facts.status().ToString().c_str());
    return 3;
  }
  report.server_facts = *facts;
  auto result = kvbench::Run(config, factory.get());
  if (!result.ok()) {
    std::fprintf(stderr, "kvbench: %s\n", result.status().ToString().c_str());
    return 3;
  }
  report.config = &config;
  report.result = &*result;
  kvbench::PrintTable(report, stdout);

  int rc = result->overall.errors > 0 || result->connection_lost ? 1 : 0;
  auto output = [&](const kv::Status& s) {
    if (s.ok()) return;
    std::fprintf(stderr, "kvbench: %s\n", s.ToString().c_str());
    rc = 4;
  };
  if (!FLAGS_json.empty()) output(kvbench::WriteJson(report, FLAGS_json));
  if (!FLAGS_timeline.empty()) {
    output(kvbench::WriteTimeline(report, FLAGS_timeline));
  }
  std::string data = FLAGS_plot_data;
  if (data.empty() && !FLAGS_plot.empty()) data = FLAGS_plot + ".dat";
  if (!data.empty()) output(kvbench::WriteCdfData(report, data));
  if (!FLAGS_plot.empty() && result->overall.latency.count() > 0) {
    std::vector<kvbench::PlotPanel> panel(1);
    panel[0].title = backend + " " + report.server + ", workload " + spec.name +
                     ", " + std::to_string(config.threads) +
                     " thread(s) x qd " + std::to_string(config.qd);
    for (size_t i = 0; i < kvbench::kOpTypes; i++) {
      if (result->ops[i].latency.count() == 0) continue;
      std::string op(kvbench::OpName(static_cast<kvbench::OpType>(i)));
      panel[0].series.push_back({backend + " " + op, data, op});
    }
    output(kvbench::RenderPlot(FLAGS_plot, panel));
  }
  return rc;
}
