// kvcli's commands: the table (names, arguments, help) that the shell's
// completion and `help` read, and the dispatcher that runs one tokenized
// line against a Session and prints its reply through an Output.
//
// Thread-safety: the table is immutable; Run* calls one per thread.
#ifndef KV_TOOLS_KVCLI_COMMANDS_H_
#define KV_TOOLS_KVCLI_COMMANDS_H_

#include <string_view>
#include <vector>

#include "output.h"
#include "session.h"
#include "tokenizer.h"

namespace kv::kvcli {

struct CommandInfo {
  std::string_view name;
  std::string_view args;          // "KEY VALUE"
  std::string_view summary;       // one line for `help`
  std::string_view aliases = "";  // other names, space-separated ("set")
};

// Every command, in the order `help` lists them.
const std::vector<CommandInfo>& CommandTable();

// Whether `word` names a command or an alias, in any case ("GET", "Set").
bool IsCommand(std::string_view word);

// The command's own name for a name or alias in any case ("SET" → "put"),
// or "" when `word` names no command.
std::string_view CommandName(std::string_view word);

// Runs one command line already split into tokens (an empty line does
// nothing and returns 0). Command names are case-insensitive; an unknown
// one is a usage error that suggests the nearest name ("unknown command
// 'gte': did you mean get?"). Prints the reply; returns the exit code (0 ok,
// 1 not found, 2 usage error, 3 connection or server error). Sets *quit
// for quit/exit.
int RunCommand(Session* session, Output* out, const std::vector<Token>& line,
               bool* quit);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_COMMANDS_H_
