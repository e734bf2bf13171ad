// Byte-level escaping shared by the tokenizer's Quote() and the output:
// which bytes are safe to show on a terminal as they are, and the \xHH
// form of the rest. Pure functions; thread-safe.
#ifndef KV_TOOLS_KVCLI_ESCAPE_H_
#define KV_TOOLS_KVCLI_ESCAPE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace kv::kvcli {

// Length of the character at bytes[i] when it is safe to print on a
// terminal as is — printable ASCII (0x20..0x7e) or a well-formed UTF-8
// sequence for a code point from U+00A0 up (no C0/C1 controls, DEL,
// surrogates, overlong forms, or bidi/format controls U+200B..U+200F,
// U+202A..U+202E, U+2066..U+2069) — else 0.
size_t SafeCharLength(std::string_view bytes, size_t i);

// Appends `bytes` as the inside of a "…" word: \" \\ \n \r \t, safe
// characters as they are, \xHH for every other byte.
void AppendEscaped(std::string_view bytes, std::string* out);

// True when every character of `bytes` is safe (SafeCharLength > 0) or
// one of \n \t: text that can be shown as it is.
bool IsDisplayable(std::string_view bytes);

// True when `bytes` is well-formed UTF-8 (any code point, controls too).
bool IsValidUtf8(std::string_view bytes);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_ESCAPE_H_
