// What kvcli's command handlers share (commands.cc, multi_commands.cc):
// the context a handler runs in, the replies for usage and operation
// errors, and how keys and values are taken from tokens. Internal to kvcli.
//
// Thread-safety: as commands.h.
#ifndef KV_TOOLS_KVCLI_COMMAND_CONTEXT_H_
#define KV_TOOLS_KVCLI_COMMAND_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "output.h"
#include "session.h"
#include "tokenizer.h"

namespace kv::kvcli::command {

using Args = std::vector<Token>;

struct Context {
  Session* session;
  Output* out;
  bool* quit;
};

// A usage error: status invalid_argument, exit 2, Reply::usage set.
Reply UsageError(std::string message);

// A reply for a failed operation on a connected client: unavailable and
// timed_out drop the connection so that the next command reconnects.
Reply OperationError(Context& c, const Status& st);

// A key is always taken literally: an unquoted @ is part of it.
std::string KeyOf(const Token& t);

// A value: the token's bytes, or the contents of the file an unquoted
// @path names; false (and *error set, a usage error) when it cannot be read.
bool ValueOf(const Token& t, std::string* value, Reply* error);

// A count as redis-cli shows it: "(integer) N" on a terminal, "N" in a
// pipe.
std::string Count(const Context& c, size_t n);

// The replies of the single-key commands, from the operation's result
// (shared by the one-at-a-time handlers and script mode's batches, so
// that both print exactly the same).
Reply PutReply(Context& c, const Status& st, uint64_t version);
Reply GetReply(Context& c, const std::string& key, const Status& st,
               const std::string& value);
Reply DelReply(Context& c, const Status& st, bool existed);

// The worst per-operation result of a batch: 3 beats 1.
inline int Worst(int a, int b) { return a > b ? a : b; }

// The commands on several keys (multi_commands.cc). Del with one key and
// the rest are in commands.cc.
Reply DelMany(Context& c, const Args& a);  // del K1 K2 …
Reply Exists(Context& c, const Args& a);
Reply Mput(Context& c, const Args& a);
Reply Mget(Context& c, const Args& a);

}  // namespace kv::kvcli::command

#endif  // KV_TOOLS_KVCLI_COMMAND_CONTEXT_H_
