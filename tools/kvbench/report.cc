#include "report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#ifndef KVBENCH_VERSION
#define KVBENCH_VERSION "unknown"
#endif
#include "git_revision.h"  // generated: KVBENCH_GIT_REVISION

namespace kvbench {
namespace {

double Us(uint64_t ns) { return ns / 1000.0; }

double OpsPerSec(const OpStats& s, double seconds) {
  return seconds > 0 ? s.latency.count() / seconds : 0;
}

// Minimal JSON emission: objects of scalars and nested objects, keys in
// the order written.
class Json {
 public:
  void Open(std::string_view key = {}) {
    Key(key);
    out_ << '{';
    first_ = true;
  }
  void Close() {
    out_ << '}';
    first_ = false;
  }
  void Str(std::string_view key, std::string_view v) {
    Key(key);
    Quote(v);
  }
  void Num(std::string_view key, double v) {
    Key(key);
    if (!std::isfinite(v)) {
      out_ << "null";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    out_ << buf;
  }
  void Int(std::string_view key, uint64_t v) {
    Key(key);
    out_ << v;
  }
  void Bool(std::string_view key, bool v) {
    Key(key);
    out_ << (v ? "true" : "false");
  }
  void Null(std::string_view key) {
    Key(key);
    out_ << "null";
  }
  std::string str() const { return out_.str(); }

 private:
  void Key(std::string_view key) {
    if (!first_) out_ << ',';
    first_ = false;
    if (key.data() != nullptr) {
      Quote(key);
      out_ << ':';
    }
  }
  void Quote(std::string_view s) {
    out_ << '"';
    for (char c : s) {
      unsigned char u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out_ << '\\' << c;
      } else if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        out_ << buf;
      } else {
        out_ << c;
      }
    }
    out_ << '"';
  }
  std::ostringstream out_;
  bool first_ = true;
};

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) {
        return line.substr(colon + 2);
      }
    }
  }
  return "unknown";
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FindFact(const Facts& facts, std::string_view needle) {
  for (const auto& [k, v] : facts) {
    if (k.find(needle) != std::string::npos) return v;
  }
  return "";
}

void WriteOp(Json* j, std::string_view key, const OpStats& s, double secs) {
  const Histogram& h = s.latency;
  j->Open(key);
  j->Int("ops", h.count());
  j->Num("ops_per_sec", OpsPerSec(s, secs));
  j->Num("p50_us", Us(h.Percentile(0.50)));
  j->Num("p90_us", Us(h.Percentile(0.90)));
  j->Num("p99_us", Us(h.Percentile(0.99)));
  j->Num("p999_us", Us(h.Percentile(0.999)));
  j->Num("max_us", Us(h.max()));
  j->Num("mean_us", h.mean() / 1000.0);
  j->Int("errors", s.errors);
  j->Int("not_found", s.not_found);
}

void WriteConfig(Json* j, const Report& r) {
  const RunConfig& c = *r.config;
  const RunResult& res = *r.result;
  const WorkloadSpec& w = c.spec;
  j->Open("config");
  j->Str("kvbench_version", KVBENCH_VERSION);
  j->Str("git_revision", KVBENCH_GIT_REVISION);
  j->Str("started_at", UtcNow());
  j->Str("backend", r.backend);
  j->Str("server", r.server);
  if (!r.keyspace.empty()) j->Str("keyspace", r.keyspace);
  if (!r.wait.empty()) j->Str("wait", r.wait);
  std::string provider = FindFact(r.server_facts, "provider");
  std::string granularity = FindFact(r.server_facts, "granularity");
  if (!provider.empty()) j->Str("provider", provider);
  if (!granularity.empty()) j->Str("pool_granularity", granularity);
  std::string version = FindFact(r.server_facts, "version");
  if (!version.empty()) j->Str("server_version", version);
  if (!r.label.empty()) j->Str("label", r.label);
  j->Str("workload", w.name);
  j->Open("mix");
  for (size_t i = 0; i < kOpTypes; i++) {
    j->Num(OpName(static_cast<OpType>(i)), w.mix[i]);
  }
  j->Close();
  j->Str("distribution", DistributionName(w.distribution));
  j->Num("zipfian_theta", w.zipfian_theta);
  j->Int("keys", w.keys);
  j->Int("key_size", w.key_size);
  j->Int("value_size_min", w.value_min);
  j->Int("value_size_max", w.value_max);
  j->Int("threads", c.threads);
  j->Int("qd", c.qd);
  j->Int("in_flight", uint64_t{c.threads} * c.qd);
  j->Num("duration_s", c.ops > 0 ? 0 : c.duration_s);
  j->Int("ops_limit", c.ops);
  j->Num("warmup_s", c.warmup_s);
  j->Int("seed", c.seed);
  j->Str("latency", "issue of a round of qd operations to its last reply");
  j->Num("measured_s", res.seconds);
  j->Open("round_trip");  // pings on one idle connection before the run
  j->Int("samples", res.ping.count());
  j->Num("p50_us", Us(res.ping.Percentile(0.5)));
  j->Num("p99_us", Us(res.ping.Percentile(0.99)));
  j->Close();
  j->Open("load_phase");
  j->Bool("ran", c.load);
  j->Int("ops", res.load_ops);
  j->Num("seconds", res.load_seconds);
  j->Num("ops_per_sec",
         res.load_seconds > 0 ? res.load_ops / res.load_seconds : 0);
  j->Close();
  j->Open("host");
  j->Str("hostname", Hostname());
  utsname u{};
  if (uname(&u) == 0)
    j->Str("kernel", std::string(u.sysname) + " " + u.release);
  j->Str("cpu", CpuModel());
  j->Int("cpus", std::thread::hardware_concurrency());
  j->Str("note", "client and server on the same machine");
  j->Close();
  if (c.server_pid > 0) j->Int("server_pid", c.server_pid);
  j->Open("server_info");
  std::set<std::string> seen;  // a server may repeat a name: keep the first
  for (const auto& [k, v] : r.server_facts) {
    if (seen.insert(k).second) j->Str(k, v);
  }
  j->Close();
  j->Close();
}

}  // namespace

void PrintTable(const Report& r, std::FILE* out) {
  const RunConfig& c = *r.config;
  const RunResult& res = *r.result;
  const WorkloadSpec& w = c.spec;
  std::fprintf(out, "%s %s", r.backend.c_str(), r.server.c_str());
  if (!r.keyspace.empty())
    std::fprintf(out, " keyspace %s", r.keyspace.c_str());
  if (!r.wait.empty()) std::fprintf(out, " wait=%s", r.wait.c_str());
  std::fprintf(
      out, " | workload %s, %s, %llu keys, %zu B keys, %zu", w.name.c_str(),
      std::string(DistributionName(w.distribution)).c_str(),
      static_cast<unsigned long long>(w.keys), w.key_size, w.value_min);
  if (w.value_max != w.value_min) std::fprintf(out, "..%zu", w.value_max);
  std::fprintf(out, " B values | %u thread(s) x qd %u | %.1f s\n", c.threads,
               c.qd, res.seconds);
  if (res.ping.count() > 0) {
    std::fprintf(out,
                 "round trip (ping, one idle connection): p50 %.1f us, p99 "
                 "%.1f us\n",
                 Us(res.ping.Percentile(0.5)), Us(res.ping.Percentile(0.99)));
  }
  std::fprintf(out, "%-8s %10s %11s %9s %9s %9s %9s %9s %7s\n", "op", "ops",
               "ops/s", "p50_us", "p90_us", "p99_us", "p99.9_us", "max_us",
               "errors");
  auto row = [&](std::string_view name, const OpStats& s) {
    const Histogram& h = s.latency;
    std::fprintf(
        out, "%-8s %10llu %11.0f %9.1f %9.1f %9.1f %9.1f %9.1f %7llu\n",
        std::string(name).c_str(), static_cast<unsigned long long>(h.count()),
        OpsPerSec(s, res.seconds), Us(h.Percentile(0.5)), Us(h.Percentile(0.9)),
        Us(h.Percentile(0.99)), Us(h.Percentile(0.999)), Us(h.max()),
        static_cast<unsigned long long>(s.errors));
  };
  for (size_t i = 0; i < kOpTypes; i++) {
    if (res.ops[i].latency.count() > 0) {
      row(OpName(static_cast<OpType>(i)), res.ops[i]);
    }
  }
  row("overall", res.overall);
  uint64_t n = res.overall.latency.count();
  if (n > 0) {
    std::fprintf(out, "cpu per op: client %.1f us", res.client_cpu_s * 1e6 / n);
    if (res.server_cpu_s >= 0) {
      std::fprintf(out, ", server %.1f us", res.server_cpu_s * 1e6 / n);
    }
    std::fprintf(out, " (same machine)\n");
  }
  for (const std::string& e : res.first_errors) {
    std::fprintf(out, "error: %s\n", e.c_str());
  }
}

kv::Status WriteJson(const Report& r, const std::string& path) {
  const RunResult& res = *r.result;
  Json j;
  j.Open();
  WriteConfig(&j, r);
  j.Open("results");
  for (size_t i = 0; i < kOpTypes; i++) {
    if (res.ops[i].latency.count() == 0 && res.ops[i].errors == 0) continue;
    WriteOp(&j, OpName(static_cast<OpType>(i)), res.ops[i], res.seconds);
    j.Close();
  }
  WriteOp(&j, "overall", res.overall, res.seconds);
  uint64_t n = res.overall.latency.count();
  j.Num("client_cpu_s", res.client_cpu_s);
  j.Num("client_cpu_us_per_op", n ? res.client_cpu_s * 1e6 / n : 0);
  if (res.server_cpu_s >= 0) {
    j.Num("server_cpu_s", res.server_cpu_s);
    j.Num("server_cpu_us_per_op", n ? res.server_cpu_s * 1e6 / n : 0);
  } else {
    j.Null("server_cpu_us_per_op");
  }
  j.Bool("connection_lost", res.connection_lost);
  j.Close();
  j.Close();
  j.Close();
  std::ofstream f(path);
  f << j.str() << '\n';
  f.close();
  if (!f) {
    return kv::Status::IoError("cannot write " + path + ": " +
                               std::strerror(errno));
  }
  return kv::Status::Ok();
}

kv::Status WriteCdfData(const Report& r, const std::string& path) {
  const RunResult& res = *r.result;
  std::ofstream f(path);
  f << "# kvbench latency CDF: " << r.backend << ' ' << r.server;
  if (!r.wait.empty()) f << " wait=" << r.wait;
  f << " workload " << r.config->spec.name << ", " << r.config->threads
    << " thread(s) x qd " << r.config->qd << "\n# columns: latency_us "
    << "fraction_at_or_below\n";
  bool first = true;
  for (size_t i = 0; i < kOpTypes; i++) {
    const Histogram& h = res.ops[i].latency;
    if (h.count() == 0) continue;
    if (!first) f << "\n\n";  // gnuplot: two blank lines end a data block
    first = false;
    f << "# op " << OpName(static_cast<OpType>(i)) << '\n';
    for (const auto& [ns, frac] : h.Cdf()) f << Us(ns) << ' ' << frac << '\n';
  }
  f.close();
  if (!f) {
    return kv::Status::IoError("cannot write " + path + ": " +
                               std::strerror(errno));
  }
  return kv::Status::Ok();
}

kv::Status WriteTimeline(const Report& r, const std::string& path) {
  const RunResult& res = *r.result;
  uint32_t width = r.config->timeline_ms;
  std::ofstream f(path);
  f << "t_ms,ops,ops_per_sec,errors,mean_us,max_us\n";
  for (size_t i = 0; i < res.timeline.size(); i++) {
    const TimelineBucket& b = res.timeline[i];
    char row[160];
    std::snprintf(row, sizeof row, "%llu,%llu,%.0f,%llu,%.1f,%.1f\n",
                  static_cast<unsigned long long>(i * uint64_t{width}),
                  static_cast<unsigned long long>(b.ops),
                  width ? b.ops * 1000.0 / width : 0,
                  static_cast<unsigned long long>(b.errors),
                  b.ops ? Us(b.total_ns / b.ops) : 0, Us(b.max_ns));
    f << row;
  }
  f.close();
  if (!f) {
    return kv::Status::IoError("cannot write " + path + ": " +
                               std::strerror(errno));
  }
  return kv::Status::Ok();
}

}  // namespace kvbench
