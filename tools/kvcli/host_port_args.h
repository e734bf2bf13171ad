// kvcli's command line before gflags sees it: redis-cli's `-h HOST` and
// `-p PORT`, and a flag whose value is missing.
//
//   -h HOST       the server's host (the port stays --server's, 7400 by
//                 default); `-h` as the last argument is --help
//   -p PORT       the server's port, 1-65535 (the host stays --server's)
//   --flag VALUE  when VALUE is a kvcli command (`kvcli --server get k1`)
//                 or starts with '-', the flag's value is missing: a usage
//                 error naming the flag, not "unknown command 'k1'"
//
// Only the flags before the command are looked at (as ParseFlags does with
// flags_before_positionals): `kvcli put k -p` stores "-p".
//
// Thread-safety: pure functions.
#ifndef KV_TOOLS_KVCLI_HOST_PORT_ARGS_H_
#define KV_TOOLS_KVCLI_HOST_PORT_ARGS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kv::kvcli {

struct PreParsed {
  // argv without -h/-p and their values (a lone trailing -h becomes
  // --help), for ParseFlags.
  std::vector<std::string> args;
  std::optional<std::string> host;  // -h
  std::optional<std::string> port;  // -p, digits, 1-65535
  // Non-empty: a usage error, one line without the "kvcli: " prefix.
  std::string error;
};

// `takes_value(name)`: --name is a flag that needs a value (not a bool).
// `is_command(word)`: word names a kvcli command (any case, aliases too).
PreParsed PreParseArgs(const std::vector<std::string>& argv,
                       const std::function<bool(std::string_view)>& takes_value,
                       const std::function<bool(std::string_view)>& is_command);

// `server` ("HOST:PORT", "[V6]:PORT") with its host and/or port replaced;
// std::nullopt when `server` is not HOST:PORT with a port of 1-65535.
std::optional<std::string> ServerAddress(
    const std::string& server, const std::optional<std::string>& host,
    const std::optional<std::string>& port);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_HOST_PORT_ARGS_H_
