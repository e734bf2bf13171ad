// kvserver: the rpkv server. Flags (gflags), signals, exit codes; the
// lifecycle itself is Server's.
//
// Exit codes: 0 clean shutdown (SIGTERM/SIGINT), 2 bad command line,
// 3 runtime failure (pool busy or damaged, cannot listen, bad access keys,
// cannot join the cluster, fenced: its cluster lease lapsed).
#include <gflags/gflags.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "access_keys.h"
#include "cluster_node.h"
#include "kv/server/server_options.h"
#include "log.h"
#include "server.h"

DEFINE_string(pool, "", "path of the pool file (created when missing)");
DEFINE_string(cluster, "",
              "join the rpkv cluster kept in this etcd "
              "(etcd://HOST:PORT[,HOST:PORT...]; needs --node_id): register "
              "on a lease, stand for controller (docs/cluster.md)");
DEFINE_uint32(node_id, 0, "this node's id in the cluster (1.., unique)");
DEFINE_string(cluster_name, "rpkv",
              "the cluster's name: its keys in etcd are under /rpkv/NAME/");
DEFINE_string(advertise, "",
              "host:port clients reach this node at (default: --listen)");
DEFINE_uint32(lease_ttl_s, 5,
              "the cluster lease's TTL in seconds (2..60): a node that "
              "cannot renew it for TTL minus a margin fences itself");
DEFINE_bool(rebalance, true,
            "cluster: the elected controller moves shards live from the "
            "most to the least loaded node while they differ by 2 or more "
            "(a node that joins gets shards); false: only drains and "
            "kvadmin move shards");
DEFINE_uint32(max_moves, 1,
              "cluster: shard moves in flight, cluster-wide, beyond which "
              "the controller starts no drain or rebalance move (1..64; "
              "kvadmin's moves count too, and are never refused)");
DEFINE_string(pool_size, "1G",
              "size of a pool this server creates (K/M/G/T suffixes)");
DEFINE_string(listen, "127.0.0.1:7400", "address to accept clients on");
DEFINE_string(provider, "auto",
              "RDMA provider: auto, tcp or verbs (sets RPMA_PROVIDER)");
DEFINE_string(segment_size, "4M",
              "log segment size of keyspaces this server creates");
DEFINE_uint64(index_capacity, 65536,
              "keys the index of a keyspace this server creates starts sized "
              "for (a hint: the index grows online as keys arrive, over the "
              "keyspace's log)");
DEFINE_uint32(max_connections, 10000,
              "connections served at once (an idle one costs ~20 KiB and a "
              "few fds: server/README.md, \"Workers\")");
DEFINE_uint32(workers, 0, "threads that drive the sessions (0: one per core)");
DEFINE_bool(allow_create, false,
            "let clients create missing keyspaces (create-if-missing flag)");
DEFINE_string(access_keys, "",
              "file of 'keyspace secret' lines (mode 600): listed keyspaces "
              "need their key");
DEFINE_string(peer_key_file, "",
              "cluster: file with the peer key (one line of 16..64 bytes, "
              "mode 600, the same on every node); peer kvservers that "
              "present it may write the copies of shards moving here");
DEFINE_double(cleaner_threshold, 0.5,
              "dead/(live+dead) fraction of a keyspace that starts the "
              "cleaner");
DEFINE_uint32(max_inflight, 32, "messages a client may have outstanding");
DEFINE_uint32(spin_us, 0,
              "after a busy pass a worker busy-polls its sessions' "
              "completions this long before blocking (0: block at once; see "
              "server/README.md)");
DEFINE_bool(group_commit, true,
            "make the COMMITs that arrive together (from every session of a "
            "worker's pass, and from all workers while a persist runs) "
            "durable with one persist point (one msync on a file pool) "
            "before acknowledging them; false: one persist point per "
            "COMMIT");
DEFINE_bool(info_all_keyspaces, false,
            "INFO lists every keyspace and its stats to every client (else "
            "a client sees only its own keyspace: do not set this when "
            "keyspaces belong to different tenants)");
DEFINE_uint32(hello_timeout_ms, 2000,
              "how long a connection may take to send HELLO");
DEFINE_uint32(max_pending_hello, 32,
              "connections waiting for HELLO at once; more HELLO connects "
              "are refused (too many connections), named connects still "
              "get in");
DEFINE_uint32(idle_timeout_ms, 300000,
              "end an admitted connection that sends nothing for this long "
              "and return its grant (0: never)");
DEFINE_uint32(refill_rate, 20,
              "grants (REFILLs) per second one connection may take; more "
              "get 'busy, retry in N ms' (a REFILL replacing a grant its "
              "commits filled at least half of is free)");
DEFINE_uint32(refill_burst, 8,
              "REFILLs one connection may take at once before --refill_rate "
              "applies");
DEFINE_uint32(grant_share_percent, 50,
              "at most this percentage of a keyspace's segments granted at "
              "once; a connection without a grant beyond it gets busy");
DEFINE_uint32(auth_delay_ms, 200,
              "delay before refusing a wrong access key, growing with recent "
              "failures (0: none)");
DEFINE_uint32(auth_delay_max_ms, 2000,
              "the longest a wrong access key's refusal is delayed");

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitRuntime = 3;

int g_stop_fd = -1;

void OnSignal(int) {
  uint64_t one = 1;
  (void)!write(g_stop_fd, &one, sizeof(one));
}

bool OurFlag(const std::string& name, gflags::CommandLineFlagInfo* info) {
  return gflags::GetCommandLineFlagInfo(name.c_str(), info) &&
         info->filename == __FILE__;
}

void PrintUsage() {
  std::string text =
      "kvserver: the rpkv server (remote persistent-memory key-value store)\n"
      "usage: kvserver --pool=PATH [flags]\n\nflags:\n";
  std::vector<gflags::CommandLineFlagInfo> all;
  gflags::GetAllFlags(&all);
  for (const auto& f : all) {
    if (f.filename != __FILE__) continue;
    text += "  --" + f.name + "  " + f.description + " (default: " +
            (f.default_value.empty() ? "\"\"" : f.default_value) + ")\n";
  }
  text +=
      "\nexit codes: 0 clean shutdown, 2 bad command line, 3 runtime "
      "failure\nsignals: SIGTERM/SIGINT shut down cleanly\n";
  fputs(text.c_str(), stdout);
}

int Usage(const std::string& why) {
  fprintf(stderr, "kvserver: %s (see kvserver --help)\n", why.c_str());
  return kExitUsage;
}

// Parses argv through gflags' registry without letting gflags exit: an
// unknown flag or a bad value is our usage error (exit 2). Returns -1 to
// go on, else the exit code.
int ParseFlags(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-help" || arg == "-h") {
      PrintUsage();
      return 0;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return Usage("unexpected argument '" + arg + "'");
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    gflags::CommandLineFlagInfo info;
    if (!OurFlag(name, &info)) {
      if (!has_value && name.rfind("no", 0) == 0 &&
          OurFlag(name.substr(2), &info) && info.type == "bool") {
        name = name.substr(2);
        value = "false";
        has_value = true;
      } else {
        return Usage("unknown flag --" + name);
      }
    }
    if (!has_value) {
      if (info.type == "bool") {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return Usage("flag --" + name + " needs a value");
      }
    }
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      return Usage("bad value '" + value + "' for --" + name);
    }
  }
  return -1;
}

int BuildOptions(kv::server::ServerOptions* out) {
  using kv::server::ParseByteSize;
  kv::Result<uint64_t> pool_size = ParseByteSize(FLAGS_pool_size);
  if (!pool_size.ok())
    return Usage("--pool_size: " + pool_size.status().message());
  kv::Result<uint64_t> seg = ParseByteSize(FLAGS_segment_size);
  if (!seg.ok()) return Usage("--segment_size: " + seg.status().message());
  if (*seg > (1ull << 30)) return Usage("--segment_size must be at most 1G");
  auto o = kv::server::MakeServerOptions(FLAGS_pool, *pool_size, FLAGS_listen);
  if (!o.ok()) return Usage(o.status().message());
  o->provider = FLAGS_provider;
  o->segment_size = static_cast<uint32_t>(*seg);
  o->index_capacity = FLAGS_index_capacity;
  o->max_connections = FLAGS_max_connections;
  if (FLAGS_workers > 1024) return Usage("--workers must be at most 1024");
  o->workers = FLAGS_workers != 0
                   ? FLAGS_workers
                   : std::max(1u, std::thread::hardware_concurrency());
  o->allow_create = FLAGS_allow_create;
  o->access_keys_path = FLAGS_access_keys;
  o->peer_key_path = FLAGS_peer_key_file;
  o->cleaner_threshold = FLAGS_cleaner_threshold;
  if (FLAGS_max_inflight == 0 || FLAGS_max_inflight > 1024) {
    return Usage("--max_inflight must be 1..1024");
  }
  o->max_inflight = static_cast<uint16_t>(FLAGS_max_inflight);
  o->hello_timeout = std::chrono::milliseconds(FLAGS_hello_timeout_ms);
  o->max_pending_hello = FLAGS_max_pending_hello;
  o->idle_timeout = std::chrono::milliseconds(FLAGS_idle_timeout_ms);
  o->refill_rate = FLAGS_refill_rate;
  o->refill_burst = FLAGS_refill_burst;
  o->grant_share_percent = FLAGS_grant_share_percent;
  o->auth_delay = std::chrono::milliseconds(FLAGS_auth_delay_ms);
  o->auth_delay_max = std::chrono::milliseconds(FLAGS_auth_delay_max_ms);
  if (FLAGS_spin_us > 1000000)
    return Usage("--spin_us must be at most 1000000");
  o->spin_us = FLAGS_spin_us;
  o->group_commit = FLAGS_group_commit;
  o->info_all_keyspaces = FLAGS_info_all_keyspaces;
  if (FLAGS_cluster.empty() != (FLAGS_node_id == 0)) {
    return Usage("--cluster and --node_id go together");
  }
  if (FLAGS_lease_ttl_s < 2 || FLAGS_lease_ttl_s > 60) {
    return Usage("--lease_ttl_s must be 2..60");
  }
  if (FLAGS_max_moves < 1 || FLAGS_max_moves > 64) {
    return Usage("--max_moves must be 1..64");
  }
  kv::Status st = kv::server::ValidateServerOptions(*o);
  if (!st.ok()) return Usage(st.message());
  *out = std::move(o).value();
  return -1;
}

}  // namespace

// A session's connection holds one fd on the tcp provider, its socket
// (its channels are its worker's connection group's). Besides them: a
// request being admitted or refused holds four (socket, its own
// completion channel's epoll fd and eventfd, its event channel), and up
// to 512 refused connections wait to hang up (server.cc), plus the
// pool, listener and workers. The soft limit is raised to the hard one,
// and a limit that cannot hold --max_connections is said at start, not
// found at the 1,000th client.
static void RaiseFdLimit(uint32_t max_connections) {
  constexpr rlim_t kFdsPerConnection = 1;
  constexpr rlim_t kReserve = 4 * 512 + 64;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);
    (void)getrlimit(RLIMIT_NOFILE, &lim);
  }
  const rlim_t need = kFdsPerConnection * max_connections + kReserve;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
    kv::server::Logf(
        "warning: the open-file limit (%llu) holds about %llu connections, "
        "not --max_connections=%u (raise it: ulimit -n %llu)",
        static_cast<unsigned long long>(lim.rlim_cur),
        static_cast<unsigned long long>(lim.rlim_cur > kReserve
                                            ? (lim.rlim_cur - kReserve) /
                                                  kFdsPerConnection
                                            : 0),
        max_connections, static_cast<unsigned long long>(need));
  }
}

int main(int argc, char** argv) {
  gflags::SetUsageMessage("kvserver --pool=PATH [flags]");
  if (int rc = ParseFlags(argc, argv); rc >= 0) return rc;
  kv::server::ServerOptions options;
  if (int rc = BuildOptions(&options); rc >= 0) return rc;

  // The provider must be chosen before any rpma call. Without the flag,
  // RPMA_PROVIDER from the environment (if any) stands.
  gflags::CommandLineFlagInfo pinfo;
  gflags::GetCommandLineFlagInfo("provider", &pinfo);
  if (!pinfo.is_default) setenv("RPMA_PROVIDER", options.provider.c_str(), 1);

  // Signals only write to an eventfd; Server::Run polls it.
  g_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (g_stop_fd < 0) {
    kv::server::Log("eventfd failed");
    return kExitRuntime;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  RaiseFdLimit(options.max_connections);
  // A cluster node serves only the shards the map gives it (none until
  // the cluster is joined, and none once fenced).
  std::unique_ptr<kv::server::ShardTable> shards;
  if (!FLAGS_cluster.empty()) {
    shards = std::make_unique<kv::server::ShardTable>(FLAGS_node_id);
    options.shards = shards.get();
  }
  auto server = kv::server::Server::Open(options);
  if (!server.ok()) {
    const kv::Status& st = server.status();
    std::string hint;
    if (st.code() == kv::StatusCode::kBusy) {
      hint = " (another kvserver or a kvadmin write holds this pool)";
    }
    kv::server::Logf("cannot start: %s%s", st.ToString().c_str(), hint.c_str());
    return kExitRuntime;
  }
  std::unique_ptr<kv::server::ClusterNode> node;
  if (!FLAGS_cluster.empty()) {
    kv::server::ClusterNode::Options c;
    c.etcd = FLAGS_cluster;
    c.cluster_name = FLAGS_cluster_name;
    c.node_id = FLAGS_node_id;
    c.address = FLAGS_advertise.empty() ? FLAGS_listen : FLAGS_advertise;
    c.lease_ttl = std::chrono::seconds(FLAGS_lease_ttl_s);
    c.rebalance = FLAGS_rebalance;
    c.max_moves = FLAGS_max_moves;
    c.shards = shards.get();
    kv::server::Server* raw = server->get();
    c.ensure_shard = [raw](const std::string& name, uint32_t id, uint32_t share,
                           bool create) {
      return raw->EnsureShard(name, id, share, create);
    };
    c.move_host = raw;
    if (!FLAGS_peer_key_file.empty()) {
      // Loaded (and checked) by the server already.
      auto key = kv::server::LoadPeerKey(FLAGS_peer_key_file);
      if (key.ok()) c.peer_key = *key;
    }
    auto joined = kv::server::ClusterNode::Start(c, [table = shards.get()] {
      table->Fence();
      kv::server::Log(
          "fenced: the cluster lease was not renewed before its deadline; "
          "stopping");
      OnSignal(0);
    });
    if (!joined.ok()) {
      kv::server::Logf("cannot join cluster '%s' at %s as node %u: %s",
                       FLAGS_cluster_name.c_str(), FLAGS_cluster.c_str(),
                       FLAGS_node_id, joined.status().ToString().c_str());
      return kExitRuntime;
    }
    node = std::move(joined).value();
    kv::server::Logf("joined cluster '%s' as node %u (%s); serving %zu shards",
                     FLAGS_cluster_name.c_str(), FLAGS_node_id,
                     c.address.c_str(), shards->owned().size());
  }
  (*server)->Run(g_stop_fd);
  const bool fenced = node && node->fenced();
  if (fenced) {
    // Sessions first: disconnecting them (and deregistering the read
    // regions) ends one-sided reads of the shards, which the ShardTable
    // cannot refuse; only then wait for the etcd threads. The map watcher
    // keeps running meanwhile: it is told first to leave the server's
    // shards alone.
    node->Quiesce();
    server->reset();
  }
  if (node && !fenced) {
    kv::Status left = node->Leave();
    if (!left.ok()) {
      kv::server::Logf(
          "leaving the cluster: %s (the registration goes when "
          "its lease expires)",
          left.ToString().c_str());
    }
  }
  node.reset();
  server->reset();
  kv::server::Log(fenced ? "stopped: fenced" : "stopped");
  return fenced ? kExitRuntime : 0;
}
