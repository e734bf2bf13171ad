// Ctrl-C while an interactive command runs (shell.cc): the first one asks
// the command to stop at its next check (a scan stops between keys) and
// kvcli returns to the prompt; a second one, for a command that does not
// check, ends kvcli as SIGINT would (exit 130). Commands that run to the
// end anyway (one get, one put) are simply finished. Outside a command
// SIGINT keeps its disposition (at the prompt ^C is a key: shell.cc).
//
// Thread-safety: one CommandInterrupt at a time, on the main thread;
// Interrupted() from any thread.
#ifndef KV_TOOLS_KVCLI_INTERRUPT_H_
#define KV_TOOLS_KVCLI_INTERRUPT_H_

#include <csignal>

namespace kv::kvcli {

// Catches SIGINT for its lifetime (one command), then restores what was.
class CommandInterrupt {
 public:
  CommandInterrupt();
  ~CommandInterrupt();
  CommandInterrupt(const CommandInterrupt&) = delete;
  CommandInterrupt& operator=(const CommandInterrupt&) = delete;

 private:
  struct sigaction saved_ {};
};

// Whether a Ctrl-C arrived during the current command.
bool Interrupted();

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_INTERRUPT_H_
