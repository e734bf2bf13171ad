// kv_e2e_commit_bench [--clients=N] [--puts=N] [--value=BYTES] [flags for
// kvserver...]: starts kvserver on a fresh pool and measures the raw
// put path (one-sided write + COMMIT + COMMIT_ACK) from N client threads,
// each with its own connection, one put in flight each. Prints p50/p90/
// p99 latency and the aggregate rate. A program with printed figures,
// not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kv/index_format.h"
#include "kv/record_format.h"
#include "raw_client.h"
#include "server_process.h"

using namespace kv;
using namespace kv::e2e;
using Clock = std::chrono::steady_clock;

namespace {

// One client: `puts` sequential puts; latencies in microseconds.
void Client(const ServerProcess* server, int id, int puts, size_t value_size,
            std::vector<double>* lat) {
  RawClient c;
  protocol::Accept a;
  if (!c.ConnectTo(server->host(), server->port(), "default").ok() ||
      !c.accept(&a).ok() || a.admit != protocol::Admit::kOk) {
    fprintf(stderr, "client %d: connect failed\n", id);
    return;
  }
  protocol::Grant g = a.grant;
  uint64_t tail = g.start;
  const std::string value(value_size, 'v');
  for (int i = 0; i < puts; i++) {
    const std::string key = "c" + std::to_string(id) + "k" + std::to_string(i);
    std::string rec(record_format::RecordSize(key.size(), value.size()), '\0');
    record_format::EncodeRecord(rec.data(), a.keyspace_id, 0, false, key,
                                value);
    if (tail + rec.size() > g.size) {
      if (!c.SendMessage(protocol::Type::kRefill, "").ok()) return;
      protocol::Header h;
      std::string payload;
      protocol::RefillAck ack;
      if (!c.ReceiveMessage(&h, &payload).ok() ||
          !protocol::DecodeRefillAck(
               reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
               a.segment_size, &ack)
               .ok() ||
          ack.status != StatusCode::kOk) {
        fprintf(stderr, "client %d: refill failed\n", id);
        return;
      }
      g = ack.grant;
      tail = g.start;
    }
    const auto t0 = Clock::now();
    if (!c.Write(g.write_desc, tail - g.start, rec).ok()) return;
    protocol::Commit cm;
    cm.segment = g.segment;
    cm.grant_id = g.grant_id;
    cm.offset = tail;
    cm.length = static_cast<uint32_t>(rec.size());
    cm.key_hash = index_format::HashKey(key);
    if (!c.SendMessage(protocol::Type::kCommit, CommitPayload(cm), i).ok()) {
      return;
    }
    protocol::Header h;
    std::string payload;
    if (!c.ReceiveMessage(&h, &payload).ok()) return;
    lat->push_back(
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    tail += rec.size();
  }
  (void)c.SendMessage(protocol::Type::kBye, "");
}

double Pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 1, puts = 2000;
  size_t value = 100;
  std::vector<std::string> server_flags;
  for (int i = 1; i < argc; i++) {
    if (std::strncmp(argv[i], "--clients=", 10) == 0) {
      clients = atoi(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--puts=", 7) == 0) {
      puts = atoi(argv[i] + 7);
    } else if (std::strncmp(argv[i], "--value=", 8) == 0) {
      value = strtoul(argv[i] + 8, nullptr, 10);
    } else {
      server_flags.push_back(argv[i]);
    }
  }
  const std::string dir = MakeTempDir("kv_commit_bench");
  std::vector<std::string> flags = {"--pool=" + dir + "/pool",
                                    "--pool_size=1G"};
  flags.insert(flags.end(), server_flags.begin(), server_flags.end());
  ServerProcess server;
  Status st = server.Start(flags);
  if (!st.ok()) {
    fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::vector<std::vector<double>> lat(clients);
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < clients; i++) {
    threads.emplace_back(Client, &server, i, puts, value, &lat[i]);
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  const size_t n = all.size();
  printf(
      "clients %d, value %zu B, puts %zu: p50 %.1f us, p90 %.1f us, p99 "
      "%.1f us, %.0f puts/s\n",
      clients, value, n, Pct(all, 0.5), Pct(all, 0.9), Pct(all, 0.99),
      n / secs);
  server.Stop();
  RemoveTree(dir);
  return n == static_cast<size_t>(clients) * puts ? 0 : 1;
}
