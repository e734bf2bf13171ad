// kvcli's interactive shell (libedit: line editing, history, tab
// completion of commands). Script mode is script.h.
//
// Thread-safety: libedit keeps global state; run one shell per process.
#ifndef KV_TOOLS_KVCLI_SHELL_H_
#define KV_TOOLS_KVCLI_SHELL_H_

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

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_SHELL_H_
