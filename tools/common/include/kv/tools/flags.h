// kv::tools::ParseFlags — one rule for every rpkv tool's command line:
// `--help` shows this tool's usage and its own flags only (never gflags'
// internal ones), and a flag the tool does not define, or a value its type
// cannot take, is a usage error (exit 2, with a message naming the flag)
// instead of gflags' exit 1.
//
// Flags are set through gflags (so FLAGS_x works as usual) but parsed
// here: `--name=value`, `-name=value`, `--name value` (non-bool flags),
// `--name` / `--noname` (bool flags); `--` ends the flags. gflags'
// built-in flags (--flagfile, --fromenv, --helpfull, ...) are not
// accepted: a tool's command line is its own flags.
//
// Thread-safety: call once, from main(), before other threads start.
#ifndef KV_TOOLS_FLAGS_H_
#define KV_TOOLS_FLAGS_H_

#include <optional>
#include <ostream>
#include <string>

namespace kv::tools {

// Exit codes every tool shares for these cases.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

struct ToolUsage {
  // The program name used in messages ("kvcli").
  std::string name;
  // Printed first by --help: what the tool does, its synopsis, exit codes.
  std::string usage;
  // Stop at the first argument that is not a flag: everything after it is
  // positional even if it starts with '-' (kvcli: `put k -1`). Otherwise
  // flags may appear anywhere (kvadmin: `keyspace create --pool=P`).
  bool flags_before_positionals = false;
  // Printed after the flag list (e.g. examples); may be empty.
  std::string footer;
};

// Parses and sets the flags of argv, then rewrites *argc/*argv to argv[0]
// plus the positional arguments, in order. Returns std::nullopt when the
// tool should go on, or an exit code when it should stop at once:
// kExitOk after printing the help (--help, -h, -help, --helpshort,
// --helpfull) to stdout, or kExitUsage after printing
// "NAME: unknown flag --x (see NAME --help)" or
// "NAME: invalid value 'v' for --x: <why>" to stderr.
std::optional<int> ParseFlags(int* argc, char*** argv, const ToolUsage& usage);

// Writes the help text: usage, then "flags:" with each of the tool's own
// flags (name, type, default, description), then the footer.
void PrintHelp(std::ostream& out, const ToolUsage& usage);

}  // namespace kv::tools

#endif  // KV_TOOLS_FLAGS_H_
