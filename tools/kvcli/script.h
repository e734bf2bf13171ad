// kvcli's script mode (commands from a non-terminal stdin or --file: no
// prompt, no history) and --pipe mode (the same, printing only errors and
// a summary): the bulk loader.
//
// Consecutive single-key put/get/del lines run as one kv::Batch, many
// operations in flight on the connection, so a file of put lines loads at
// the speed of the pipeline rather than of one round trip per line. What
// a script sees is still line by line: replies are printed in input order,
// an error names its line ("line 7: error: …"), a line waits for an
// earlier line of the batch on the same key (the batch is run first), and
// every other command (mput, scan, use, …) runs after the lines before it
// have finished. Unlike one-at-a-time, after a failed line the lines of
// its batch may already have been applied (as redis-cli --pipe).
//
// Thread-safety: one script per Session.
#ifndef KV_TOOLS_KVCLI_SCRIPT_H_
#define KV_TOOLS_KVCLI_SCRIPT_H_

#include <cstddef>
#include <istream>
#include <ostream>

#include "output.h"
#include "session.h"

namespace kv::kvcli {

struct ScriptOptions {
  // Single-key lines in one batch (1: one line at a time).
  size_t batch_lines = 1024;
  // --pipe: where the summary goes at the end ("done: 200000 commands,
  // 0 errors, 0 not found, 200000 lines in 2.1 s (95238 commands/s)");
  // the Output is quiet then (only errors and "(not found)" lines are
  // printed as they come). nullptr: no summary.
  std::ostream* summary = nullptr;
};

// Runs every line of `in` (lines starting with # are comments) until its
// end or quit/exit; a line that does not tokenize is a usage error.
// Returns the highest exit code of its lines (0 when all succeeded).
int RunScript(Session* session, Output* out, std::istream& in,
              const ScriptOptions& options = {});

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_SCRIPT_H_
