// kvcli — the rpkv shell.
//
//   kvcli [flags]                      interactive shell (stdin a terminal)
//   kvcli [flags] < commands.txt       script mode (stdin not a terminal)
//   kvcli [flags] --file=commands.txt  script mode, from a file
//   kvcli [flags] --pipe < puts.txt    bulk load: errors and a summary
//   kvcli [flags] COMMAND [ARGS…]      one command, then exit
//
// redis-cli's -h HOST / -p PORT are taken too (host_port_args.h).
#include <gflags/gflags.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "host_port_args.h"
#include "kv/tools/flags.h"
#include "script.h"
#include "shell.h"

DEFINE_string(server, "127.0.0.1:7400",
              "kvserver address, HOST:PORT (or -h HOST -p PORT)");
DEFINE_string(keyspace, "default", "keyspace to use");
DEFINE_string(cluster, "",
              "use an rpkv cluster instead of one server: "
              "etcd://HOST:PORT[,HOST:PORT...], the etcd holding its map "
              "(--server is then ignored; --keyspace names a cluster "
              "keyspace; docs/cluster.md)");
DEFINE_string(cluster_name, "rpkv", "the cluster's name in etcd (/rpkv/NAME/)");
DEFINE_bool(create, false,
            "create the keyspace if it does not exist (kvserver needs "
            "--allow_create)");
DEFINE_string(access_key, "",
              "the keyspace's access key (default: $RPKV_ACCESS_KEY)");
DEFINE_string(format, "text", "text, or json (one object per reply)");
DEFINE_bool(raw, false, "print values' bytes exactly: no escaping, no newline");
DEFINE_uint32(connect_timeout_ms, 5000, "connect timeout");
DEFINE_uint32(timeout_ms, 10000, "per-operation timeout");
DEFINE_string(file, "",
              "run the commands of this file (script mode), not stdin's");
DEFINE_bool(pipe, false,
            "bulk load: run the script (stdin or --file) printing only "
            "errors, not-found lines and a summary (as redis-cli --pipe)");
DEFINE_uint32(pipeline, 1024,
              "script mode: single-key put/get/del lines run together, many "
              "in flight (1: one line at a time)");
DEFINE_string(history, "",
              "history file of the interactive shell (default "
              "~/.rpkv_history; 'none' keeps none)");

namespace {

constexpr const char* kUsage =
    "kvcli — the rpkv shell: put, get and scan keys of a kvserver keyspace.\n"
    "\n"
    "usage:\n"
    "  kvcli [flags]                   interactive shell (history, Tab "
    "completion)\n"
    "  kvcli [flags] < FILE            script: one command per line, no "
    "prompt\n"
    "  kvcli [flags] --file=FILE       the same, from FILE\n"
    "  kvcli [flags] --pipe < FILE     bulk load: only errors (with their line"
    "\n"
    "                                  number) and a summary are printed\n"
    "  kvcli [flags] COMMAND [ARG…]    one command, e.g.\n"
    "        kvcli --server=127.0.0.1:7400 --keyspace=default get k\n"
    "        kvcli -h 127.0.0.1 -p 7400 GET k     (as redis-cli; -h alone: "
    "this help)\n"
    "\n"
    "commands (any case): put KEY VALUE [ex SECONDS|px MS], get KEY,\n"
    "  del KEY [KEY…], expire KEY SECONDS, pexpire KEY MS, ttl KEY,\n"
    "  pttl KEY, persist KEY,\n"
    "  exists KEY [KEY…], mput K V [K V…], mget K [K…], scan [PREFIX "
    "[LIMIT]],\n"
    "  scan CURSOR [match PATTERN] [count N], incr KEY, incrby KEY N,\n"
    "  append KEY VALUE, dbsize, use KEYSPACE, keyspaces,\n"
    "  stats, ping, info, clear, help [COMMAND], quit;\n"
    "  redis-cli's names work too: set = put, mset = mput, delete = del.\n"
    "  del/exists of several keys print how many were deleted/exist (exists:\n"
    "  exit 1 when any is absent). Type help in the shell for details.\n"
    "shell: Ctrl-C clears the line, Ctrl-L or clear clears the screen, "
    "Ctrl-D or\n"
    "  quit leaves.\n"
    "values: \"a b\", 'a b', escapes \\x00 \\n \\t \\\\ in the shell and "
    "scripts;\n"
    "  @PATH reads the value from a file. One-shot arguments are taken as "
    "your\n"
    "  shell passes them, but a leading @ still reads a file (\\@ is a "
    "literal @).\n"
    "\n"
    "exit codes: 0 ok, 1 not found, 2 usage error, 3 connection or server "
    "error\n"
    "  (script mode: the highest of its commands)\n";

kv::kvcli::Token ArgToken(const char* arg) {
  kv::kvcli::Token t;
  t.text = arg;
  if (t.text.size() > 1 && t.text[0] == '\\' && t.text[1] == '@') {
    t.text.erase(0, 1);
  } else if (!t.text.empty() && t.text[0] == '@') {
    t.text.erase(0, 1);
    t.from_file = true;
  }
  return t;
}

int UsageError(const std::string& what) {
  std::cerr << "kvcli: " << what << " (see kvcli --help)\n";
  return kv::tools::kExitUsage;
}

// Whether --name needs a value (a kvcli flag that is not a bool).
bool TakesValue(std::string_view name) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(std::string(name).c_str(), &info) &&
         info.type != "bool";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> given(argv, argv + argc);
  const kv::kvcli::PreParsed pre =
      kv::kvcli::PreParseArgs(given, TakesValue, kv::kvcli::IsCommand);
  if (!pre.error.empty()) return UsageError(pre.error);
  std::vector<char*> rest;
  for (const std::string& a : pre.args)
    rest.push_back(const_cast<char*>(a.c_str()));
  rest.push_back(nullptr);
  argc = static_cast<int>(pre.args.size());
  argv = rest.data();
  if (auto rc = kv::tools::ParseFlags(&argc, &argv,
                                      {.name = "kvcli",
                                       .usage = kUsage,
                                       .flags_before_positionals = true})) {
    return *rc;
  }
  using namespace kv::kvcli;
  if (FLAGS_format != "text" && FLAGS_format != "json") {
    return UsageError("--format must be text or json, not '" + FLAGS_format +
                      "'");
  }
  const auto server = ServerAddress(FLAGS_server, pre.host, pre.port);
  if (!server) {
    return UsageError("--server must be HOST:PORT (port 1-65535), not '" +
                      FLAGS_server + "'");
  }
  kv::ClientOptions co;
  co.server = *server;
  co.cluster = FLAGS_cluster;
  co.cluster_name = FLAGS_cluster_name;
  co.keyspace = FLAGS_keyspace;
  co.create_if_missing = FLAGS_create;
  co.access_key = FLAGS_access_key;
  if (co.access_key.empty() && getenv("RPKV_ACCESS_KEY") != nullptr) {
    co.access_key = getenv("RPKV_ACCESS_KEY");
  }
  co.connect_timeout = std::chrono::milliseconds(FLAGS_connect_timeout_ms);
  co.op_timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
  // A script keeps as many operations in flight as the server grants
  // (kvserver --max_inflight, 32 by default); the client caps it at 256.
  co.max_inflight = 256;
  // co.wait stays kAdaptive: a short spin then sleep, so an idle shell
  // uses no CPU and ping still shows the real round trip.
  if (FLAGS_pipeline == 0) return UsageError("--pipeline must be at least 1");
  const bool script = argc == 1 && (FLAGS_pipe || !FLAGS_file.empty() ||
                                    isatty(STDIN_FILENO) != 1);
  if (argc > 1 && (FLAGS_pipe || !FLAGS_file.empty())) {
    return UsageError("--pipe and --file run a script: give no command");
  }
  std::ifstream file;
  if (!FLAGS_file.empty()) {
    file.open(FLAGS_file, std::ios::binary);
    if (!file) {
      return UsageError("cannot read --file=" + FLAGS_file + ": " +
                        strerror(errno));
    }
  }
  // A script is a stream of lines: no C stdio shares these streams, and
  // their buffers are flushed per batch, not per reply.
  if (script) std::ios::sync_with_stdio(false);
  Session session(co);
  Output out({.format = FLAGS_format == "json" ? Format::kJson : Format::kText,
              .raw = FLAGS_raw,
              .stdout_tty = isatty(STDOUT_FILENO) == 1,
              .usage_ref = argc > 1 ? "see kvcli --help" : "type help",
              .flush = !script,
              .quiet = FLAGS_pipe},
             std::cout, std::cerr);

  if (script) {
    return RunScript(&session, &out, FLAGS_file.empty() ? std::cin : file,
                     {.batch_lines = FLAGS_pipeline,
                      .summary = FLAGS_pipe ? &std::cout : nullptr});
  }
  if (argc > 1) {
    std::vector<Token> line;
    for (int i = 1; i < argc; i++) line.push_back(ArgToken(argv[i]));
    bool quit = false;
    return RunCommand(&session, &out, line, &quit);
  }
  std::string history = FLAGS_history.empty()     ? DefaultHistoryPath()
                        : FLAGS_history == "none" ? ""
                                                  : FLAGS_history;
  return RunInteractive(&session, &out, history);
}
