// kvadmin — pool administration.
//
//   kvadmin create   --pool=PATH --size=SIZE
//   kvadmin info     --pool=PATH
//   kvadmin check    --pool=PATH
//   kvadmin keyspace create --pool=PATH --keyspace=NAME [options]
//   kvadmin keyspace drop   --pool=PATH --keyspace=NAME
//   kvadmin keyspace list   --pool=PATH
//   kvadmin snapshot      --pool=PATH --out=DIR
//   kvadmin snapshot-info --snapshot=DIR [--format=json]
//   kvadmin verify        --pool=PATH --snapshot=DIR [--limit=N]
//   kvadmin restore       --pool=PATH --snapshot=DIR [--force]
//   kvadmin --cluster=etcd://H:P cluster status [--format=json]
//   kvadmin --cluster=etcd://H:P cluster create-keyspace NAME [--shards=N]
//           [--replicas=R] [--wait_s=S]
//   kvadmin --cluster=etcd://H:P cluster move KEYSPACE SHARD --to=NODE
//   kvadmin --cluster=etcd://H:P cluster move-pause|move-resume KEYSPACE SHARD
//   kvadmin --cluster=etcd://H:P cluster move-rate KEYSPACE SHARD BYTES_PER_S
//   kvadmin --cluster=etcd://H:P cluster move-cancel KEYSPACE SHARD [--force]
//   kvadmin --cluster=etcd://H:P cluster drain|undrain NODE
//
// Exit codes: 0 ok, 1 the operation failed, 2 usage error, 3 check found
// problems / verify found differences / restore could not re-link all.
#include <gflags/gflags.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <optional>

#include "cluster_commands.h"
#include "cluster_move_commands.h"
#include "commands.h"
#include "dump_commands.h"
#include "kv/store/keyspace_sizing.h"
#include "kv/tools/flags.h"
#include "snapshot_commands.h"

DEFINE_string(pool, "", "pool file or DAX device");
DEFINE_string(size, "", "pool size for create: bytes or with K/M/G/T suffix");
DEFINE_string(keyspace, "", "keyspace name: 1..63 bytes of [A-Za-z0-9_.-]");
DEFINE_string(name, "", "the same as --keyspace");
DEFINE_uint64(index_capacity, 65536,
              "keyspace create: keys the index starts sized for (it grows "
              "online as keys arrive)");
DEFINE_string(segment_size, "4M", "keyspace create: log segment size");
DEFINE_string(log_size, "0",
              "keyspace create: log size (0 = half of the largest free "
              "extent less the index, at least three segments, as kvserver: "
              "room is left for more "
              "keyspaces; kvadmin info shows it)");
DEFINE_string(max_value_size, "1M", "keyspace create: largest value accepted");
DEFINE_bool(commit_log, true,
            "keyspace create: give the keyspace a commit log (pool format "
            "4: a commit on a file pool persists its record and a 32-byte "
            "entry instead of its index pages; docs/format.md)");
DEFINE_string(out, "", "snapshot: the new snapshot directory (must not exist)");
DEFINE_string(snapshot, "", "snapshot-info/verify/restore: snapshot directory");
DEFINE_string(format, "text", "snapshot-info, cluster status: text or json");
DEFINE_uint64(limit, 100, "verify: list at most this many differences");
DEFINE_bool(force, false,
            "restore: restore a snapshot taken of another pool (uuid); "
            "cluster move-cancel: cancel a released move whose target is "
            "not live");
DEFINE_string(in, "", "load: the dump file to read");
DEFINE_bool(yes, false,
            "restore, keyspace drop: do not ask before destroying data "
            "(needed when stdin is not a terminal)");
DEFINE_string(cluster, "",
              "cluster commands: etcd://HOST:PORT[,HOST:PORT...] of the "
              "cluster's etcd");
DEFINE_string(cluster_name, "rpkv",
              "cluster commands: the cluster (its keys are under "
              "/rpkv/NAME/ in etcd)");
DEFINE_int32(shards, 4, "cluster create-keyspace: shards (1..1024)");
DEFINE_int32(replicas, 2,
             "cluster create-keyspace: replicas per shard, 1..8 (a primary "
             "and backups on distinct nodes; at most the live nodes)");
DEFINE_int32(wait_s, 30,
             "cluster create-keyspace: seconds to wait for the controller "
             "to place the keyspace (0: do not wait)");
DEFINE_string(to, "", "cluster move: the node id the shard moves to");
DEFINE_bool(verbose, false,
            "restore: list every entry not re-linked (default: counts and "
            "the first few)");

namespace {

constexpr const char* kUsage =
    "kvadmin — create, inspect and check rpkv pools; manage keyspaces.\n"
    "\n"
    "usage:\n"
    "  kvadmin create   --pool=PATH --size=SIZE     create a pool file "
    "(sparse;\n"
    "                   at least one that holds a keyspace of "
    "--index_capacity,\n"
    "                   --segment_size)\n"
    "  kvadmin info     --pool=PATH                 geometry, keyspaces, "
    "stats\n"
    "  kvadmin check    --pool=PATH                 verify every slot and "
    "record\n"
    "  kvadmin keyspace create --pool=PATH --keyspace=NAME "
    "[--index_capacity=N]\n"
    "                   [--segment_size=SIZE] [--log_size=SIZE] "
    "[--max_value_size=SIZE]\n"
    "  kvadmin keyspace drop   --pool=PATH --keyspace=NAME [--yes]  (--name "
    "also works)\n"
    "  kvadmin keyspace list   --pool=PATH\n"
    "\n"
    "backups of keys and values (offline; docs/dump_format.md):\n"
    "  kvadmin dump     --pool=PATH --out=FILE [--keyspace=NAME]   every "
    "key and value\n"
    "  kvadmin load     --pool=PATH --in=FILE [--keyspace=NAME]    into "
    "fresh keyspaces\n"
    "                   (the whole file is checked first)\n"
    "\n"
    "offline metadata snapshots (RocksDB; the pool must not be in use).\n"
    "A snapshot is METADATA ONLY, NOT A BACKUP: it holds no values, and a "
    "restore\n"
    "re-links only records still in the pool's log.\n"
    "  kvadmin snapshot --pool=PATH --out=DIR       catalog, segment table "
    "and\n"
    "                   index entries (no values) into a new directory\n"
    "  kvadmin snapshot-info --snapshot=DIR [--format=json]\n"
    "  kvadmin verify   --pool=PATH --snapshot=DIR [--limit=N]   keys added, "
    "removed,\n"
    "                   changed since the snapshot (exit 3 when different)\n"
    "  kvadmin restore  --pool=PATH --snapshot=DIR [--force] [--yes] "
    "[--verbose]\n"
    "                   rebuild catalog and indexes, re-linking records "
    "that still\n"
    "                   verify\n"
    "restore and keyspace drop ask first (--yes: do not; required when stdin "
    "is\n"
    "not a terminal).\n"
    "\n"
    "a cluster (etcd only; docs/cluster.md \"kvadmin cluster\"):\n"
    "  kvadmin --cluster=etcd://H:P[,...] [--cluster_name=rpkv] cluster "
    "status\n"
    "                   controller, nodes, keyspaces and their shards "
    "(unavailable:\n"
    "                   primary not live), pending keyspaces\n"
    "  kvadmin --cluster=etcd://H:P cluster create-keyspace NAME "
    "[--shards=4]\n"
    "                   [--replicas=1] [--wait_s=30]   ask the controller "
    "for a keyspace\n"
    "                   and wait until the map holds it\n"
    "  kvadmin --cluster=... cluster status --format=json   the same as one "
    "JSON object\n"
    "  kvadmin --cluster=... cluster move KEYSPACE SHARD --to=NODE   move a "
    "shard live\n"
    "  kvadmin --cluster=... cluster move-pause|move-resume KEYSPACE SHARD\n"
    "  kvadmin --cluster=... cluster move-rate KEYSPACE SHARD BYTES_PER_S   "
    "(K/M/G; 0: none)\n"
    "  kvadmin --cluster=... cluster move-cancel KEYSPACE SHARD [--force]\n"
    "  kvadmin --cluster=... cluster drain|undrain NODE   move every shard "
    "off a node\n"
    "                   (or stop doing so); cluster status shows moves and "
    "drains\n"
    "\n"
    "SIZE: bytes, or with a K/M/G/T suffix (binary), e.g. 1G.\n"
    "exit codes: 0 ok, 1 operation failed (also: the keyspace already "
    "exists, the\n"
    "            wait timed out), 2 usage error, 3 check found "
    "problems,\n"
    "            verify found differences, or restore could not re-link "
    "every entry\n";

// restore and keyspace drop destroy data: ask first. --yes skips the
// question; without it and without a terminal to ask on, refuse. Returns
// an exit code to stop with, or nullopt to go on.
std::optional<int> Confirm(const std::string& what) {
  if (FLAGS_yes) return std::nullopt;
  if (isatty(STDIN_FILENO) != 1) {
    std::cerr << "kvadmin: " << what
              << ": refused, nothing changed. stdin is not a terminal, so "
                 "kvadmin cannot ask; pass --yes to go ahead\n";
    return kv::kvadmin::kExitUsage;
  }
  std::cerr << "kvadmin: " << what << ".\nType yes to go on: " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer) || answer != "yes") {
    std::cerr << "kvadmin: not confirmed, nothing changed\n";
    return kv::kvadmin::kExitFailed;
  }
  return std::nullopt;
}

int Usage(const std::string& why) {
  std::cerr << "kvadmin: " << why << "\n\n" << kUsage;
  return kv::kvadmin::kExitUsage;
}

bool SizeFlag(const std::string& flag, const std::string& text, uint64_t* out,
              std::string* why) {
  auto v = kv::kvadmin::ParseSize(text);
  if (!v.ok()) {
    *why = "--" + flag + ": " + v.status().message();
    return false;
  }
  *out = *v;
  return true;
}

int RunSnapshotCommand(const std::string& cmd) {
  using namespace kv::kvadmin;
  const bool needs_pool = cmd != "snapshot-info";
  if (needs_pool && FLAGS_pool.empty())
    return Usage(cmd + " needs --pool=PATH");
  if (cmd == "snapshot") {
    if (FLAGS_out.empty()) return Usage("snapshot needs --out=DIR");
    return Snapshot(FLAGS_pool, FLAGS_out, std::cout, std::cerr);
  }
  if (FLAGS_snapshot.empty()) return Usage(cmd + " needs --snapshot=DIR");
  if (cmd == "snapshot-info") {
    if (FLAGS_format != "text" && FLAGS_format != "json")
      return Usage("--format must be text or json");
    return SnapshotInfo(FLAGS_snapshot, FLAGS_format == "json", std::cout,
                        std::cerr);
  }
  if (cmd == "verify") {
    return Verify(FLAGS_pool, FLAGS_snapshot, FLAGS_limit, std::cout,
                  std::cerr);
  }
  if (auto rc = Confirm("restore replaces the catalog and every index of " +
                        FLAGS_pool +
                        " with the snapshot's (keys written "
                        "since it was taken are lost)")) {
    return *rc;
  }
  return Restore(FLAGS_pool, FLAGS_snapshot, FLAGS_force, FLAGS_verbose,
                 std::cout, std::cerr);
}

// The cluster subcommands and their positional arguments (after
// "cluster <sub>").
struct ClusterSub {
  const char* name;
  int args;
  const char* usage;
};
constexpr ClusterSub kClusterSubs[] = {
    {"status", 0, ""},
    {"create-keyspace", 1, "NAME"},
    {"move", 2, "KEYSPACE SHARD --to=NODE"},
    {"move-pause", 2, "KEYSPACE SHARD"},
    {"move-resume", 2, "KEYSPACE SHARD"},
    {"move-rate", 3, "KEYSPACE SHARD BYTES_PER_S"},
    {"move-cancel", 2, "KEYSPACE SHARD"},
    {"drain", 1, "NODE"},
    {"undrain", 1, "NODE"},
};

// KEYSPACE SHARD from argv[3], argv[4]; a usage message in *why otherwise.
std::optional<kv::cluster::ShardRef> ShardArgs(char** argv, std::string* why) {
  if (kv::Status st = kv::cluster::ValidateClusterKeyspaceName(argv[3]);
      !st.ok()) {
    *why = st.message();
    return std::nullopt;
  }
  kv::Result<uint32_t> shard = kv::cluster::ParseShardId(argv[4]);
  if (!shard.ok()) {
    *why = shard.status().message();
    return std::nullopt;
  }
  return kv::cluster::ShardRef{argv[3], *shard};
}

int RunCreateKeyspace(kv::kvadmin::ClusterTarget& t, const char* name) {
  using namespace kv::kvadmin;
  if (FLAGS_shards < 1 || FLAGS_replicas < 1) {
    return Usage("--shards and --replicas must be at least 1");
  }
  if (FLAGS_replicas >
      static_cast<int>(kv::cluster::ClusterMap::kMaxReplicas)) {
    return Usage("--replicas must be at most " +
                 std::to_string(kv::cluster::ClusterMap::kMaxReplicas));
  }
  if (FLAGS_wait_s < 0) return Usage("--wait_s must not be negative");
  const kv::cluster::KeyspaceSpec spec{name,
                                       static_cast<uint32_t>(FLAGS_shards),
                                       static_cast<uint32_t>(FLAGS_replicas)};
  return ClusterCreateKeyspace(*t.etcd, t.keys, spec,
                               std::chrono::seconds(FLAGS_wait_s), std::cout,
                               std::cerr);
}

int RunMoveCommand(kv::kvadmin::ClusterTarget& t, const std::string& sub,
                   char** argv) {
  using namespace kv::kvadmin;
  std::string why;
  std::optional<kv::cluster::ShardRef> ref = ShardArgs(argv, &why);
  if (!ref) return Usage(why);
  if (sub == "move") {
    if (FLAGS_to.empty()) return Usage("cluster move needs --to=NODE");
    kv::Result<uint32_t> to = kv::cluster::ParseNodeId(FLAGS_to);
    if (!to.ok()) return Usage("--to: " + to.status().message());
    return ClusterMove(*t.etcd, t.keys, *ref, *to, std::cout, std::cerr);
  }
  MoveChange change;
  if (sub == "move-pause" || sub == "move-resume") {
    change.paused = sub == "move-pause";
  } else if (sub == "move-rate") {
    kv::Result<uint64_t> rate = ParseSize(argv[5]);
    if (!rate.ok()) return Usage("BYTES_PER_S: " + rate.status().message());
    change.rate = *rate;
  } else {
    change.cancel = true;
    change.force = FLAGS_force;
  }
  return ClusterMoveChange(*t.etcd, t.keys, *ref, change, std::cout, std::cerr);
}

int RunClusterCommand(int argc, char** argv) {
  using namespace kv::kvadmin;
  std::string names;
  for (const ClusterSub& c : kClusterSubs) {
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  if (argc < 3) return Usage("cluster needs one of: " + names);
  const std::string sub = argv[2];
  const ClusterSub* cmd = nullptr;
  for (const ClusterSub& c : kClusterSubs) {
    if (sub == c.name) cmd = &c;
  }
  if (cmd == nullptr) return Usage("unknown cluster command '" + sub + "'");
  const int want_args = 3 + cmd->args;
  if (argc < want_args) {
    return Usage("cluster " + sub + " needs " + cmd->usage);
  }
  if (argc > want_args) {
    return Usage("unexpected argument '" + std::string(argv[want_args]) + "'");
  }
  if (FLAGS_cluster.empty()) {
    return Usage("cluster " + sub + " needs --cluster=etcd://HOST:PORT");
  }
  kv::Result<ClusterTarget> t =
      OpenClusterTarget(FLAGS_cluster, FLAGS_cluster_name);
  if (!t.ok()) return Usage(t.status().message());
  if (sub == "status") {
    if (FLAGS_format != "text" && FLAGS_format != "json") {
      return Usage("--format must be text or json");
    }
    return ClusterStatus(*t->etcd, t->keys, std::cout, std::cerr,
                         FLAGS_format == "json");
  }
  if (sub == "create-keyspace") return RunCreateKeyspace(*t, argv[3]);
  if (sub == "drain" || sub == "undrain") {
    kv::Result<uint32_t> node = kv::cluster::ParseNodeId(argv[3]);
    if (!node.ok()) return Usage("NODE: " + node.status().message());
    return ClusterDrain(*t->etcd, t->keys, *node, sub == "drain", std::cout,
                        std::cerr);
  }
  return RunMoveCommand(*t, sub, argv);
}

}  // namespace

int main(int argc, char** argv) {
  const kv::tools::ToolUsage usage{.name = "kvadmin", .usage = kUsage};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "help")) {
      kv::tools::PrintHelp(std::cout, usage);
      return kv::kvadmin::kExitOk;
    }
  }
  if (auto rc = kv::tools::ParseFlags(&argc, &argv, usage)) return *rc;
  if (FLAGS_keyspace.empty()) FLAGS_keyspace = FLAGS_name;
  if (argc < 2) return Usage("missing command");
  const std::string cmd = argv[1];
  using namespace kv::kvadmin;
  if (cmd == "create") {
    if (argc != 2)
      return Usage("unexpected argument '" + std::string(argv[2]) + "'");
    if (FLAGS_pool.empty()) return Usage("create needs --pool=PATH");
    if (FLAGS_size.empty()) return Usage("create needs --size=SIZE (e.g. 1G)");
    uint64_t size;
    std::string why;
    if (!SizeFlag("size", FLAGS_size, &size, &why)) return Usage(why);
    // kvserver's rule (store/keyspace_sizing.h): a pool must hold a
    // keyspace of the default index and segment size.
    uint64_t seg = 0;
    if (!SizeFlag("segment_size", FLAGS_segment_size, &seg, &why)) {
      return Usage(why);
    }
    const uint64_t need = kv::store::MinPoolSizeFor(FLAGS_index_capacity, seg);
    if (size < need) {
      std::cerr << "kvadmin: --size=" << FLAGS_size
                << " cannot hold a keyspace (" << kv::store::kMinSegments
                << " segments of " << (seg >> 10) << " KiB and an index for "
                << FLAGS_index_capacity
                << " keys, at most half the pool): use --size="
                << ((need + (1 << 20) - 1) >> 20)
                << "M or more, or a smaller --segment_size / "
                   "--index_capacity (nothing was created)\n";
      return kExitUsage;
    }
    return CreatePool(FLAGS_pool, size, std::cout, std::cerr);
  }
  if (cmd == "info" || cmd == "check") {
    if (argc != 2)
      return Usage("unexpected argument '" + std::string(argv[2]) + "'");
    if (FLAGS_pool.empty()) return Usage(cmd + " needs --pool=PATH");
    return cmd == "info" ? Info(FLAGS_pool, std::cout, std::cerr)
                         : Check(FLAGS_pool, std::cout, std::cerr);
  }
  if (cmd == "keyspace") {
    if (argc != 3) return Usage("keyspace needs one of: create, drop, list");
    const std::string sub = argv[2];
    if (FLAGS_pool.empty())
      return Usage("keyspace " + sub + " needs --pool=PATH");
    if (sub == "list") return KeyspaceList(FLAGS_pool, std::cout, std::cerr);
    if (sub != "create" && sub != "drop") {
      return Usage("unknown keyspace command '" + sub + "'");
    }
    if (FLAGS_keyspace.empty())
      return Usage("keyspace " + sub + " needs --keyspace=NAME");
    if (sub == "drop") {
      if (auto rc =
              Confirm("keyspace drop deletes keyspace '" + FLAGS_keyspace +
                      "' of " + FLAGS_pool + " and every key in it")) {
        return *rc;
      }
      return KeyspaceDrop(FLAGS_pool, FLAGS_keyspace, std::cout, std::cerr);
    }
    kv::store::KeyspaceOptions o;
    uint64_t seg, log, maxv;
    std::string why;
    if (!SizeFlag("segment_size", FLAGS_segment_size, &seg, &why) ||
        !SizeFlag("log_size", FLAGS_log_size, &log, &why) ||
        !SizeFlag("max_value_size", FLAGS_max_value_size, &maxv, &why)) {
      return Usage(why);
    }
    if (seg > UINT32_MAX || maxv > UINT32_MAX) {
      return Usage("--segment_size / --max_value_size too large");
    }
    o.index_capacity = FLAGS_index_capacity;
    o.segment_size = static_cast<uint32_t>(seg);
    o.log_size = log;
    o.max_value_size = static_cast<uint32_t>(maxv);
    o.commit_log = FLAGS_commit_log;
    return KeyspaceCreate(FLAGS_pool, FLAGS_keyspace, o, std::cout, std::cerr);
  }
  if (cmd == "dump" || cmd == "load") {
    if (argc != 2)
      return Usage("unexpected argument '" + std::string(argv[2]) + "'");
    if (FLAGS_pool.empty()) return Usage(cmd + " needs --pool=PATH");
    if (cmd == "dump") {
      if (FLAGS_out.empty()) return Usage("dump needs --out=FILE");
      return Dump(FLAGS_pool, FLAGS_out, FLAGS_keyspace, std::cout, std::cerr);
    }
    if (FLAGS_in.empty()) return Usage("load needs --in=FILE");
    return Load(FLAGS_pool, FLAGS_in, FLAGS_keyspace, std::cout, std::cerr);
  }
  if (cmd == "snapshot" || cmd == "snapshot-info" || cmd == "verify" ||
      cmd == "restore") {
    if (argc != 2)
      return Usage("unexpected argument '" + std::string(argv[2]) + "'");
    return RunSnapshotCommand(cmd);
  }
  if (cmd == "cluster") return RunClusterCommand(argc, argv);
  return Usage("unknown command '" + cmd + "'");
}
