// kvcli's line loops: the interactive shell (libedit: line editing,
// history, tab completion of commands) and script mode (commands read
// from a non-terminal stdin: no prompt, no history).
//
// Thread-safety: libedit keeps global state; run one shell per process.
#ifndef KV_TOOLS_KVCLI_SHELL_H_
#define KV_TOOLS_KVCLI_SHELL_H_

#include <istream>
#include <string>

#include "output.h"
#include "session.h"

namespace kv::kvcli {

// The history file: $HOME/.rpkv_history (the passwd entry's home when
// HOME is unset); "" when there is no home.
std::string DefaultHistoryPath();

// Reads lines with libedit until quit/exit or Ctrl-D, showing the
// session's prompt; Ctrl-C drops the line being typed (the shell goes on),
// Ctrl-L clears the screen; loads `history_path` first and saves every line to
// it (mode 0600; "" keeps no history). Returns 0.
int RunInteractive(Session* session, Output* out,
                   const std::string& history_path);

// Runs every line of `in` (lines starting with # are comments) until its
// end or quit/exit; a line that does not tokenize is a usage error. Returns
// the highest exit code of its commands (0 when all succeeded).
int RunScript(Session* session, Output* out, std::istream& in);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_SHELL_H_
