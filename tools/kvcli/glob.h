// Redis-style glob patterns for `scan … match PATTERN`: `*` any bytes,
// `?` one byte, `[abc]`, `[a-z]`, `[^a]` one byte of (not of) a set, `\x`
// the byte x itself. Keys are bytes: NUL and any other byte match as
// themselves. An unterminated `[` matches a literal `[`.
//
// Thread-safety: pure functions.
#ifndef KV_TOOLS_KVCLI_GLOB_H_
#define KV_TOOLS_KVCLI_GLOB_H_

#include <string>
#include <string_view>

namespace kv::kvcli {

bool GlobMatch(std::string_view pattern, std::string_view key);

// The bytes every key matching `pattern` starts with (up to its first
// unescaped `*`, `?` or `[`): the prefix a scan can ask the client for.
std::string GlobPrefix(std::string_view pattern);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_GLOB_H_
