// kvconnscale — how many connections a kvserver holds and what each
// costs (figures, not a test; server/README.md, "Workers, measured").
//
//   kvconnscale --server=H:P --server_pid=PID --idle=10000
//     opens N named connections from one RPMA peer (one provider engine
//     thread on this side; the connections are one connection group, so
//     each costs this process one fd, its socket), waits until every one
//     is admitted, reads the
//     server's threads and RSS (/proc/PID/status) before and after, holds
//     them --hold_s seconds and checks that none was dropped.
//   kvconnscale --server=H:P --active=1000 --puts=20 --threads=8
//     opens N client connections (kv::Client), puts --puts self-checking
//     values on each (round robin over the connections of a thread), then
//     reads every key back on another connection and counts every ack
//     that was not ok and every value that does not match.
// Exit: 0 figures printed and nothing wrong, 1 something wrong (a
// connection refused or dropped, an ack not ok, a wrong value), 2 usage.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <infiniband/verbs.h>
#include <librpma.h>
#include <poll.h>
#include <rpma_ext.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/client/client.h"
#include "kv/endpoint.h"
#include "kv/protocol.h"

DEFINE_string(server, "127.0.0.1:7400", "kvserver address HOST:PORT");
DEFINE_string(keyspace, "default", "keyspace to connect to");
DEFINE_int32(server_pid, 0, "kvserver's pid (threads and RSS are read)");
DEFINE_uint32(idle, 0, "idle connections to open and hold");
DEFINE_uint32(hold_s, 5, "seconds to hold the idle connections");
DEFINE_uint32(active, 0, "connections that put and read back");
DEFINE_uint32(puts, 20, "puts per active connection");
DEFINE_uint32(threads, 8, "client threads for --active");

namespace {

namespace pr = kv::protocol;
using Clock = std::chrono::steady_clock;

struct ProcFigures {
  long threads = -1;
  long rss_kib = -1;
};

ProcFigures ReadProc(int pid) {
  ProcFigures f;
  if (pid <= 0) return f;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) f.threads = std::stol(line.substr(8));
    if (line.rfind("VmRSS:", 0) == 0) f.rss_kib = std::stol(line.substr(6));
  }
  return f;
}

// One raw connection: the named connect a client sends, no HELLO.
struct RawConn {
  rpma_conn* conn = nullptr;
  bool admitted = false;
  bool gone = false;
};

// The connections, all members of one group, and their events.
class Group {
 public:
  explicit Group(rpma_conn_group* g) : g_(g) {}
  void Add(rpma_conn* c, RawConn* rc) { by_conn_[c] = rc; }
  // Takes every report the group has; true once `conn` (if given) saw
  // `want`. Hang-ups mark their connection gone.
  bool Drain(rpma_conn* conn, rpma_conn_event want) {
    bool seen = false;
    rpma_conn* who = nullptr;
    int what = 0;
    while (rpma_conn_group_next(g_, &who, &what) == 0) {
      if (what != RPMA_CONN_GROUP_EVENT) continue;
      rpma_conn_event ev = RPMA_CONN_UNDEFINED;
      while (rpma_conn_next_event(who, &ev) == 0) {
        if (who == conn && ev == want) seen = true;
        auto it = by_conn_.find(who);
        if (it != by_conn_.end() &&
            (ev == RPMA_CONN_CLOSED || ev == RPMA_CONN_LOST)) {
          it->second->gone = true;
        }
      }
    }
    return seen;
  }
  bool Wait(rpma_conn* conn, rpma_conn_event want, int ms) {
    int fd = -1;
    rpma_conn_group_get_fd(g_, &fd);
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < end) {
      if (Drain(conn, want)) return true;
      pollfd p{fd, POLLIN, 0};
      poll(&p, 1, 50);
    }
    return false;
  }

 private:
  rpma_conn_group* const g_;
  std::unordered_map<rpma_conn*, RawConn*> by_conn_;
};

int RunIdle(const kv::Endpoint& ep) {
  ibv_context* ctx = nullptr;
  if (rpma_utils_get_ibv_context(ep.host.c_str(), RPMA_UTIL_IBV_CONTEXT_REMOTE,
                                 &ctx) != 0) {
    std::fprintf(stderr, "kvconnscale: no RDMA device reaches %s\n",
                 ep.host.c_str());
    return 1;
  }
  rpma_peer* peer = nullptr;
  if (rpma_peer_new(ctx, &peer) != 0) return 1;
  rpma_conn_cfg* cfg = nullptr;
  rpma_conn_cfg_new(&cfg);
  rpma_conn_cfg_set_sq_size(cfg, 4);
  rpma_conn_cfg_set_rq_size(cfg, 4);
  rpma_conn_cfg_set_cq_size(cfg, 8);
  rpma_conn_group* group_handle = nullptr;
  if (rpma_conn_group_new(peer, &group_handle) != 0) return 1;
  Group group(group_handle);
  const ProcFigures before = ReadProc(FLAGS_server_pid);
  pr::Connect cd;
  cd.name = FLAGS_keyspace;
  uint8_t pdata[pr::kConnectSize];
  pr::EncodeConnect(cd, pdata);
  std::vector<RawConn> conns(FLAGS_idle);
  const auto t0 = Clock::now();
  size_t admitted = 0;
  for (uint32_t i = 0; i < FLAGS_idle; i++) {
    rpma_conn_req* req = nullptr;
    if (rpma_conn_req_new(peer, ep.host.c_str(), ep.port.c_str(), cfg, &req) !=
        0) {
      std::fprintf(stderr, "kvconnscale: connection %u: request failed\n", i);
      break;
    }
    if (rpma_conn_req_set_group(req, group_handle) != 0) {
      std::fprintf(stderr, "kvconnscale: connection %u: no group\n", i);
      rpma_conn_req_delete(&req);
      break;
    }
    rpma_conn_private_data pd{pdata, static_cast<uint8_t>(sizeof(pdata))};
    if (rpma_conn_req_connect(&req, &pd, &conns[i].conn) != 0) {
      std::fprintf(stderr, "kvconnscale: connection %u: connect failed\n", i);
      break;
    }
    group.Add(conns[i].conn, &conns[i]);
    if (!group.Wait(conns[i].conn, RPMA_CONN_ESTABLISHED, 10000)) {
      std::fprintf(stderr, "kvconnscale: connection %u not established\n", i);
      break;
    }
    rpma_conn_private_data in{};
    rpma_conn_get_private_data(conns[i].conn, &in);
    pr::Accept a;
    if (!pr::DecodeAccept(in.ptr, in.len, &a).ok() ||
        a.admit != pr::Admit::kOk) {
      std::fprintf(stderr, "kvconnscale: connection %u refused: %s\n", i,
                   a.reason.c_str());
      break;
    }
    conns[i].admitted = true;
    admitted++;
    if ((i + 1) % 1000 == 0) {
      std::fprintf(stderr, "kvconnscale: %u connections admitted\n", i + 1);
    }
  }
  const double open_s =
      std::chrono::duration<double>(Clock::now() - t0).count();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const ProcFigures held = ReadProc(FLAGS_server_pid);
  std::this_thread::sleep_for(std::chrono::seconds(FLAGS_hold_s));
  (void)group.Drain(nullptr, RPMA_CONN_UNDEFINED);
  size_t dropped = 0;
  for (RawConn& c : conns) dropped += c.admitted && c.gone;
  const ProcFigures after_hold = ReadProc(FLAGS_server_pid);
  std::printf("idle connections: %zu admitted of %u in %.1f s, %zu dropped\n",
              admitted, FLAGS_idle, open_s, dropped);
  if (FLAGS_server_pid > 0) {
    std::printf("server threads: %ld before, %ld holding them\n",
                before.threads, held.threads);
    std::printf(
        "server RSS: %ld KiB before, %ld KiB holding them (%ld KiB "
        "after %u s)\n",
        before.rss_kib, held.rss_kib, after_hold.rss_kib, FLAGS_hold_s);
    if (admitted > 0) {
      std::printf("per connection: %.1f KiB\n",
                  static_cast<double>(held.rss_kib - before.rss_kib) /
                      static_cast<double>(admitted));
    }
  }
  for (RawConn& c : conns) {
    if (c.conn == nullptr) continue;
    rpma_conn_disconnect(c.conn);
  }
  // One grace period for all of them, then delete.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  for (RawConn& c : conns) {
    if (c.conn != nullptr) rpma_conn_delete(&c.conn);
  }
  rpma_conn_group_delete(&group_handle);
  rpma_conn_cfg_delete(&cfg);
  rpma_peer_delete(&peer);
  return admitted == FLAGS_idle && dropped == 0 ? 0 : 1;
}

std::string ValueFor(uint32_t conn, uint32_t i) {
  return "conn" + std::to_string(conn) + "-put" + std::to_string(i) + "-" +
         std::to_string((conn * 2654435761u) ^ (i * 40503u));
}

int RunActive() {
  const ProcFigures before = ReadProc(FLAGS_server_pid);
  const uint32_t n = FLAGS_active;
  const uint32_t threads = std::max(1u, std::min(FLAGS_threads, n));
  std::vector<std::unique_ptr<kv::Client>> clients(n);
  std::atomic<uint64_t> refused{0}, bad_acks{0}, wrong{0}, puts{0};
  kv::ClientOptions o;
  o.server = FLAGS_server;
  o.keyspace = FLAGS_keyspace;
  o.wait = kv::ClientOptions::Wait::kBlock;
  o.slot_cache_entries = 0;  // every get reads the index
  auto each = [&](auto fn) {
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; t++) {
      ts.emplace_back([&, t] {
        for (uint32_t c = t; c < n; c += threads) fn(c);
      });
    }
    for (std::thread& t : ts) t.join();
  };
  const auto t0 = Clock::now();
  each([&](uint32_t c) {
    auto made = kv::Client::Connect(o);
    if (!made.ok()) {
      if (refused.fetch_add(1) < 5) {
        std::fprintf(stderr, "kvconnscale: connection %u: %s\n", c,
                     made.status().ToString().c_str());
      }
      return;
    }
    clients[c] = std::move(made).value();
  });
  const ProcFigures connected = ReadProc(FLAGS_server_pid);
  // Puts: every thread goes round its connections, one put each per
  // round, so all connections are active at once.
  {
    std::vector<std::thread> ts;
    for (uint32_t t = 0; t < threads; t++) {
      ts.emplace_back([&, t] {
        for (uint32_t i = 0; i < FLAGS_puts; i++) {
          for (uint32_t c = t; c < n; c += threads) {
            if (!clients[c]) continue;
            kv::Status st = clients[c]->Put(
                "c" + std::to_string(c) + "/" + std::to_string(i),
                ValueFor(c, i));
            puts.fetch_add(1);
            if (!st.ok() && bad_acks.fetch_add(1) < 5) {
              std::fprintf(stderr, "kvconnscale: put: %s\n",
                           st.ToString().c_str());
            }
          }
        }
      });
    }
    for (std::thread& t : ts) t.join();
  }
  const double put_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // Read back on the next connection (another session's view).
  each([&](uint32_t c) {
    kv::Client* reader = clients[(c + 1) % n].get();
    if (!clients[c] || reader == nullptr) return;
    for (uint32_t i = 0; i < FLAGS_puts; i++) {
      std::string v;
      kv::Status st =
          reader->Get("c" + std::to_string(c) + "/" + std::to_string(i), &v);
      if ((!st.ok() || v != ValueFor(c, i)) && wrong.fetch_add(1) < 5) {
        std::fprintf(stderr, "kvconnscale: c%u/%u: %s\n", c, i,
                     st.ok() ? "wrong value" : st.ToString().c_str());
      }
    }
  });
  clients.clear();
  std::printf(
      "active connections: %u (%llu refused), %llu puts in %.1f s, "
      "%llu acks not ok, %llu values wrong or missing\n",
      n, static_cast<unsigned long long>(refused.load()),
      static_cast<unsigned long long>(puts.load()), put_s,
      static_cast<unsigned long long>(bad_acks.load()),
      static_cast<unsigned long long>(wrong.load()));
  if (FLAGS_server_pid > 0) {
    std::printf(
        "server threads: %ld before, %ld with them connected; RSS "
        "%ld -> %ld KiB\n",
        before.threads, connected.threads, before.rss_kib, connected.rss_kib);
  }
  return refused == 0 && bad_acks == 0 && wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "kvconnscale --server=HOST:PORT [--server_pid=PID] (--idle=N | "
      "--active=N)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  auto ep = kv::Endpoint::Parse(FLAGS_server);
  if (!ep.ok() || (FLAGS_idle == 0) == (FLAGS_active == 0)) {
    std::fprintf(stderr,
                 "kvconnscale: give --server=HOST:PORT and one of --idle=N, "
                 "--active=N (see --help)\n");
    return 2;
  }
  // Up to the hard limit: --idle=10000 needs 10,000 sockets here too.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);
  }
  return FLAGS_idle > 0 ? RunIdle(*ep) : RunActive();
}
