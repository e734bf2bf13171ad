// kv::server::Stats — the server's counters, as INFO kStats reports them.
//
// Gets are one-sided RDMA reads the server's CPU never sees: they cannot be
// counted here (the client library counts its own).
// Thread-safety: counters are atomics; Text() may run concurrently.
#ifndef KV_SERVER_STATS_H_
#define KV_SERVER_STATS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kv/store/options.h"

namespace kv::server {

struct Stats {
  std::atomic<uint64_t> connections_total{0};   // admitted
  std::atomic<uint64_t> connections_active{0};  // sessions alive
  std::atomic<uint64_t> refusals{0};
  std::atomic<uint64_t> puts{0};
  std::atomic<uint64_t> deletes{0};
  std::atomic<uint64_t> commits{0};  // ok commits (puts + deletes)
  std::atomic<uint64_t> commit_failures{0};
  // Persist points of group-committed puts (commit_groups <= commits).
  std::atomic<uint64_t> commit_groups{0};
  // Those of them that COMMITs of more than one session shared.
  std::atomic<uint64_t> commit_groups_shared{0};
  std::atomic<uint64_t> committed_bytes{0};
  std::atomic<uint64_t> refills{0};
  std::atomic<uint64_t> hellos{0};
  std::atomic<uint64_t> infos{0};
  std::atomic<uint64_t> protocol_errors{0};  // ERROR sent
  std::atomic<uint64_t> sessions_lost{0};    // closed without BYE
  std::atomic<uint64_t> cleaner_runs{0};
  std::atomic<uint64_t> cleaner_segments{0};
  std::atomic<uint64_t> cleaner_failures{0};

  static void Add(std::atomic<uint64_t>& c, uint64_t n = 1) {
    c.fetch_add(n, std::memory_order_relaxed);
  }
};

// One keyspace's numbers for the text.
struct KeyspaceLine {
  std::string name;
  store::KeyspaceStats stats;
};

// "name value" lines: every counter, then keyspace.<name>.<field> for
// keys, live_bytes, dead_bytes, segments, free_segments, open_segments,
// sealed_segments.
std::string StatsText(const Stats& s, const std::vector<KeyspaceLine>& ks);

}  // namespace kv::server

#endif  // KV_SERVER_STATS_H_
