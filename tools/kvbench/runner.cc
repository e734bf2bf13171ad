#include "runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "cpu_usage.h"
#include "value.h"

namespace kvbench {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Clock::now().time_since_epoch())
      .count();
}

enum Phase : int { kWarmup, kMeasure, kStop };

// A timeline longer than this (a day of 1 ms buckets is far more) stops
// growing: its memory stays bounded whatever --duration says.
constexpr size_t kMaxTimelineBuckets = 1 << 20;

// What the threads share; everything here is synchronized.
struct Shared {
  Shared(const RunConfig& c)
      : config(c),
        counter(c.spec.keys),
        zipf(c.spec.distribution == Distribution::kUniform ? 1 : c.spec.keys,
             c.spec.zipfian_theta) {}

  void NoteError(const std::string& message) {
    std::lock_guard<std::mutex> lock(mu);
    if (first_errors.size() < 5) first_errors.push_back(message);
  }

  const RunConfig& config;
  KeyCounter counter;
  const ZipfianGenerator zipf;  // copied by each thread's KeyChooser
  std::atomic<int> phase{kWarmup};
  std::atomic<uint64_t> claimed{0};  // measured operations handed out
  std::atomic<bool> fatal{false};    // a connection failed: stop all
  std::atomic<uint32_t> finished{0};
  std::atomic<uint64_t> measure_start_ns{0};  // set before kMeasure
  std::mutex mu;
  std::vector<std::string> first_errors;  // guarded by mu
};

// One operation of a round and where its request(s) sit.
struct Pending {
  OpType op;
  uint64_t key_id;
  int write = -1;  // rmw: index of its put in the second round
};

class Worker {
 public:
  Worker(Shared* shared, std::unique_ptr<Backend> backend, uint32_t index)
      : shared_(shared),
        config_(shared->config),
        backend_(std::move(backend)),
        rng_(config_.seed * 0x9e3779b97f4a7c15ull + index),
        keys_(config_.spec, shared->zipf),
        ops_(config_.spec) {}

  // Writes keys [begin, end) once (version 0), qd (at least 16) at a time.
  kv::Status Load(uint64_t begin, uint64_t end) {
    size_t batch = std::max<size_t>(config_.qd, 16);
    for (uint64_t id = begin; id < end;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(batch, end - id));
      round_.resize(n);
      for (size_t i = 0; i < n; i++) {
        Request& q = round_[i];
        q.kind = Request::Kind::kPut;
        FormatKey(id + i, config_.spec.key_size, &q.key);
        MakeValue(id + i, 0, NextValueSize(config_.spec, &rng_), &q.value);
      }
      kv::Status st = backend_->Execute(round_, &replies_);
      for (size_t i = 0; i < n && st.ok(); i++) {
        if (replies_[i].outcome != Reply::Outcome::kOk) {
          st = kv::Status::Unavailable("load: put of " + round_[i].key +
                                       " failed: " + replies_[i].error);
        }
      }
      if (!st.ok()) return st;
      id += n;
      done.fetch_add(n, std::memory_order_relaxed);
    }
    return kv::Status::Ok();
  }

  // Times n pings (nothing else in flight): the round-trip floor.
  kv::Status Ping(uint32_t n, Histogram* out) {
    for (uint32_t i = 0; i < n; i++) {
      uint64_t t0 = NowNs();
      KV_RETURN_IF_ERROR(backend_->Ping());
      out->Record(NowNs() - t0);
    }
    return kv::Status::Ok();
  }

  void RunLoop() {
    while (!shared_->fatal.load(std::memory_order_relaxed)) {
      int phase = shared_->phase.load(std::memory_order_acquire);
      if (phase == kStop) break;
      size_t n = config_.qd;
      if (phase == kMeasure && config_.ops > 0) {
        uint64_t c = shared_->claimed.fetch_add(n);
        if (c >= config_.ops) break;
        n = static_cast<size_t>(std::min<uint64_t>(n, config_.ops - c));
      }
      RunRound(n, phase == kMeasure);
    }
  }

  std::array<OpStats, kOpTypes> stats;
  std::vector<TimelineBucket> timeline;  // RunConfig::timeline_ms > 0
  std::atomic<uint64_t> done{0};         // operations completed, for progress
  uint64_t last_end_ns = 0;              // end of the last measured round

 private:
  void RunRound(size_t n, bool measure) {
    BuildRound(n);
    uint64_t t0 = NowNs();
    kv::Status st = backend_->Execute(round_, &replies_);
    uint64_t t1 = NowNs();
    uint64_t t2 = t1;
    if (st.ok() && !writes_.empty()) {
      BuildRmwWrites();
      st = backend_->Execute(writes_, &write_replies_);
      t2 = NowNs();
    }
    if (!st.ok()) {
      shared_->fatal.store(true);
      shared_->NoteError("connection lost: " + st.ToString());
    }
    for (size_t i = 0; i < n; i++) {
      const Pending& p = pending_[i];
      std::string error = st.ok() ? Evaluate(i) : st.ToString();
      if (p.op == OpType::kInsert) shared_->counter.Acknowledge(p.key_id);
      if (!measure) continue;
      OpStats& s = stats[static_cast<size_t>(p.op)];
      uint64_t end = p.op == OpType::kRmw ? t2 : t1;
      s.latency.Record(end - t0);
      bool failed = !error.empty() && error != "not_found";
      Note(end, end - t0, failed);
      if (error == "not_found") {
        s.not_found++;
      } else if (failed) {
        s.errors++;
        if (st.ok()) {
          shared_->NoteError(std::string(OpName(p.op)) + " of " +
                             round_[i].key + ": " + error);
        }
      }
    }
    if (measure) last_end_ns = t2;
    done.fetch_add(n, std::memory_order_relaxed);
  }

  // Counts an operation that completed at `end` in its timeline bucket.
  void Note(uint64_t end, uint64_t latency_ns, bool failed) {
    if (config_.timeline_ms == 0) return;
    uint64_t start = shared_->measure_start_ns.load(std::memory_order_relaxed);
    if (end < start) return;
    size_t i = static_cast<size_t>((end - start) /
                                   (config_.timeline_ms * uint64_t{1000000}));
    if (i >= kMaxTimelineBuckets) return;
    if (i >= timeline.size()) timeline.resize(i + 1);
    TimelineBucket& b = timeline[i];
    b.ops++;
    b.errors += failed ? 1 : 0;
    b.total_ns += latency_ns;
    if (latency_ns > b.max_ns) b.max_ns = latency_ns;
  }

  void BuildRound(size_t n) {
    const WorkloadSpec& spec = config_.spec;
    round_.resize(n);
    pending_.resize(n);
    writes_.clear();
    for (size_t i = 0; i < n; i++) {
      Pending& p = pending_[i];
      Request& q = round_[i];
      p.op = ops_.Next(&rng_);
      p.write = -1;
      p.key_id = p.op == OpType::kInsert
                     ? shared_->counter.Allocate()
                     : keys_.Next(shared_->counter.limit(), &rng_);
      FormatKey(p.key_id, spec.key_size, &q.key);
      switch (p.op) {
        case OpType::kRead:
          q.kind = Request::Kind::kGet;
          break;
        case OpType::kRmw:
          q.kind = Request::Kind::kGet;
          p.write = static_cast<int>(writes_.size());
          writes_.emplace_back();
          break;
        case OpType::kUpdate:
        case OpType::kInsert:
          q.kind = Request::Kind::kPut;
          MakeValue(p.key_id, static_cast<uint32_t>(rng_()),
                    NextValueSize(spec, &rng_), &q.value);
          break;
        case OpType::kDelete:
          q.kind = Request::Kind::kDelete;
          break;
      }
    }
  }

  // The writes of the round's read-modify-writes: the value read, modified
  // (next version), written back.
  void BuildRmwWrites() {
    for (size_t i = 0; i < pending_.size(); i++) {
      const Pending& p = pending_[i];
      if (p.write < 0) continue;
      Request& w = writes_[p.write];
      w.kind = Request::Kind::kPut;
      w.key = round_[i].key;
      const Reply& r = replies_[i];
      uint32_t version =
          r.outcome == Reply::Outcome::kOk ? ValueVersion(r.value) + 1 : 1;
      MakeValue(p.key_id, version, NextValueSize(config_.spec, &rng_),
                &w.value);
    }
  }

  // "" when operation i of the round did what it should, "not_found" for
  // a read of a key a custom mix's deletes may have removed, else why not.
  std::string Evaluate(size_t i) const {
    const Pending& p = pending_[i];
    const Reply& r = replies_[i];
    bool deletes = config_.spec.mix[static_cast<size_t>(OpType::kDelete)] > 0;
    switch (r.outcome) {
      case Reply::Outcome::kError:
        return r.error;
      case Reply::Outcome::kNotFound:
        if (round_[i].kind != Request::Kind::kGet) break;
        if (deletes) {
          if (p.op == OpType::kRead) return "not_found";
          break;  // an rmw of a deleted key writes it afresh
        }
        return config_.load ? "not found (it was loaded)"
                            : "not found (run once with --load to write the "
                              "keys first)";
      case Reply::Outcome::kOk:
        if (round_[i].kind == Request::Kind::kGet) {
          std::string bad = CheckValue(p.key_id, r.value);
          if (!bad.empty()) return bad;
        }
        break;
    }
    if (p.write >= 0) {
      const Reply& w = write_replies_[p.write];
      if (w.outcome != Reply::Outcome::kOk) return "write: " + w.error;
    }
    return "";
  }

  Shared* shared_;
  const RunConfig& config_;
  std::unique_ptr<Backend> backend_;
  std::mt19937_64 rng_;
  KeyChooser keys_;
  OpChooser ops_;
  std::vector<Request> round_;
  std::vector<Reply> replies_;
  std::vector<Pending> pending_;
  std::vector<Request> writes_;
  std::vector<Reply> write_replies_;
};

uint64_t TotalDone(const std::vector<std::unique_ptr<Worker>>& workers) {
  uint64_t sum = 0;
  for (const auto& w : workers) sum += w->done.load(std::memory_order_relaxed);
  return sum;
}

// Waits until `until` returns true, printing a progress line every second
// when asked. Returns the seconds waited.
template <typename Until>
double Wait(const char* label, const std::vector<std::unique_ptr<Worker>>& ws,
            bool progress, Until until) {
  auto start = Clock::now();
  auto last = start;
  uint64_t last_done = TotalDone(ws);
  while (!until()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto now = Clock::now();
    if (progress && now - last >= std::chrono::seconds(1)) {
      uint64_t d = TotalDone(ws);
      double dt = std::chrono::duration<double>(now - last).count();
      std::fprintf(stderr, "\r\033[K%-6s %6.1fs %12.0f ops/s", label,
                   std::chrono::duration<double>(now - start).count(),
                   (d - last_done) / dt);
      last = now;
      last_done = d;
    }
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

kv::Result<RunResult> Run(const RunConfig& config, BackendFactory* factory) {
  Shared shared(config);
  std::vector<std::unique_ptr<Worker>> workers;
  for (uint32_t i = 0; i < config.threads; i++) {
    auto backend = factory->Connect();
    if (!backend.ok()) return backend.status();
    workers.push_back(
        std::make_unique<Worker>(&shared, std::move(*backend), i));
  }
  RunResult result;
  std::vector<std::thread> threads;

  if (config.load) {
    std::vector<kv::Status> load_status(config.threads);
    uint64_t keys = config.spec.keys;
    for (uint32_t i = 0; i < config.threads; i++) {
      uint64_t begin = keys * i / config.threads;
      uint64_t end = keys * (i + 1) / config.threads;
      threads.emplace_back([&, i, begin, end] {
        load_status[i] = workers[i]->Load(begin, end);
        shared.finished.fetch_add(1);
      });
    }
    result.load_seconds = Wait("load", workers, config.progress, [&] {
      return shared.finished.load() == config.threads;
    });
    for (auto& t : threads) t.join();
    threads.clear();
    for (const kv::Status& st : load_status) KV_RETURN_IF_ERROR(st);
    result.load_ops = keys;
    for (auto& w : workers) w->done.store(0);
  }

  if (config.pings > 0) {
    KV_RETURN_IF_ERROR(workers[0]->Ping(config.pings, &result.ping));
  }

  shared.finished.store(0);
  for (auto& w : workers) {
    threads.emplace_back([&shared, worker = w.get()] {
      worker->RunLoop();
      shared.finished.fetch_add(1);
    });
  }
  auto all_done = [&] {
    return shared.finished.load() == config.threads || shared.fatal.load();
  };
  auto warm_end = Clock::now() + std::chrono::duration<double>(config.warmup_s);
  Wait("warmup", workers, config.progress,
       [&] { return all_done() || Clock::now() >= warm_end; });

  CpuTimes cpu0 = SelfCpu();
  kv::Result<CpuTimes> server0 = kv::Status::NotFound("no --server_pid");
  if (config.server_pid > 0) server0 = ProcessCpu(config.server_pid);
  uint64_t measure_start = NowNs();
  shared.measure_start_ns.store(measure_start, std::memory_order_relaxed);
  shared.phase.store(kMeasure, std::memory_order_release);

  auto run_end =
      Clock::now() + std::chrono::duration<double>(config.duration_s);
  Wait("run", workers, config.progress, [&] {
    return all_done() || (config.ops == 0 && Clock::now() >= run_end);
  });
  shared.phase.store(kStop, std::memory_order_release);
  for (auto& t : threads) t.join();

  CpuTimes cpu1 = SelfCpu();
  result.client_cpu_s = cpu1.total() - cpu0.total();
  if (server0.ok()) {
    auto server1 = ProcessCpu(config.server_pid);
    if (server1.ok()) result.server_cpu_s = server1->total() - server0->total();
  }
  uint64_t end = measure_start;
  for (auto& w : workers) {
    end = std::max(end, w->last_end_ns);
    for (size_t op = 0; op < kOpTypes; op++) {
      result.ops[op].Merge(w->stats[op]);
      result.overall.Merge(w->stats[op]);
    }
    if (w->timeline.size() > result.timeline.size()) {
      result.timeline.resize(w->timeline.size());
    }
    for (size_t i = 0; i < w->timeline.size(); i++) {
      result.timeline[i].Merge(w->timeline[i]);
    }
  }
  result.seconds = (end - measure_start) / 1e9;
  result.first_errors = shared.first_errors;
  result.connection_lost = shared.fatal.load();
  return result;
}

}  // namespace kvbench
