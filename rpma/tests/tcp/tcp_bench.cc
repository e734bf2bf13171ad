// A benchmark program (prints figures, asserts nothing) for the tcp
// provider on 127.0.0.1: 64-byte read latency, read ops/s at a queue
// depth, and write bandwidth. Target and initiator run in one process
// with separate Pds (separate progress engines), as two peers would.
//
//   rpma_tcp_bench [seconds]
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tcp_test_util.h"

using namespace rpma::prov;
using namespace rpma::prov::tcp_test;

namespace {

constexpr int kAll = kAccessLocalWrite | kAccessRemoteWrite |
                     kAccessRemoteRead | kAccessFlushVisibility |
                     kAccessFlushPersistent;

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Bench {
  Pair p;
  std::vector<uint8_t> target = std::vector<uint8_t>(64 << 20);
  std::vector<uint8_t> local = std::vector<uint8_t>(64 << 20);
  std::unique_ptr<Mr> tmr, lmr;

  bool Init() {
    p.Connect(256, 16);
    if (::testing::Test::HasFatalFailure()) return false;
    return p.server.pd->RegMr(target.data(), target.size(), kAll, &tmr) == 0 &&
           p.client.pd->RegMr(local.data(), local.size(), kAll, &lmr) == 0;
  }

  SendWr Wr(Opcode op, uint32_t len, size_t slot) {
    SendWr w;
    w.opcode = op;
    w.signaled = true;
    w.wr_id = slot;
    w.sge = {local.data() + slot * len, len, lmr->lkey()};
    w.remote_addr = reinterpret_cast<uint64_t>(target.data()) + slot * len;
    w.rkey = tmr->rkey();
    return w;
  }

  // Runs `qd` outstanding ops for `secs`; returns ops and fills latencies
  // (qd 1 only).
  long Run(Opcode op, uint32_t len, int qd, double secs,
           std::vector<double>* lat) {
    Qp* qp = p.client.qp();
    Cq* cq = p.client.cq.get();
    std::vector<double> start(qd);
    for (int i = 0; i < qd; ++i) {
      start[i] = Now();
      if (qp->PostSend(Wr(op, len, i)) != 0) return -1;
    }
    long done = 0;
    double end = Now() + secs;
    ibv_wc wc[64];
    for (;;) {
      int n = cq->Poll(64, wc);
      if (n < 0) return -1;
      if (n == 0) {
        sched_yield();  // 2 shared cores: let the engines run
        continue;
      }
      double t = Now();
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) return -1;
        size_t slot = wc[i].wr_id;
        if (lat != nullptr) lat->push_back(t - start[slot]);
        ++done;
        if (t < end) {
          start[slot] = Now();
          if (qp->PostSend(Wr(op, len, slot)) != 0) return -1;
        } else {
          --qd;
        }
      }
      if (qd == 0) return done;
    }
  }
};

double Pct(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  double secs = argc > 1 ? std::atof(argv[1]) : 3.0;
  Bench b;
  if (!b.Init()) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }
  std::vector<double> lat;
  long n = b.Run(Opcode::kRead, 64, 1, secs, &lat);
  if (n <= 0) return 1;
  std::printf("read 64B qd1:   p50 %.1f us  p99 %.1f us  (%ld ops)\n",
              Pct(lat, 0.5) * 1e6, Pct(lat, 0.99) * 1e6, n);
  n = b.Run(Opcode::kRead, 64, 32, secs, nullptr);
  std::printf("read 64B qd32:  %.0f ops/s\n", n / secs);
  n = b.Run(Opcode::kWrite, 65536, 16, secs, nullptr);
  std::printf("write 64KiB qd16: %.1f MB/s\n", n * 65536.0 / secs / 1e6);
  return 0;
}
