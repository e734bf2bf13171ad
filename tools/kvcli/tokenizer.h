// kvcli's command-line tokenizer: splits one line into words, with the
// quoting and escapes a person needs to type binary keys and values.
//
//   put "a key" 'it''s'    words: put, a key, its
//   put k "a\x00b\n"        escapes in "…" and unquoted: \xHH \n \r \t \0
//                           \a \b \f \v \e \\ \" \' \space
//   put k 'C:\dir'          '…' is literal except \' and \\
//   put k @photo.jpg        an unquoted leading @ marks a value from a file
//                           ("@x" or \@x is the literal text @x)
//   # comment               an unquoted # starting a word ends the line
//
// Quoted and unquoted parts next to each other make one word (a"b c"d is
// "ab cd"). Pure functions; thread-safe.
#ifndef KV_TOOLS_KVCLI_TOKENIZER_H_
#define KV_TOOLS_KVCLI_TOKENIZER_H_

#include <string>
#include <string_view>
#include <vector>

#include "kv/status.h"

namespace kv::kvcli {

struct Token {
  std::string text;        // the word's bytes, escapes resolved
  bool from_file = false;  // unquoted leading @: text is the path after it
  bool operator==(const Token&) const = default;
};

// Splits `line` into tokens. Errors (invalid_argument, the message names
// the column): an unterminated quote, a trailing backslash, \x without
// two hex digits, an unknown escape.
Result<std::vector<Token>> Tokenize(std::string_view line);

// The word `bytes` written so that Tokenize reads it back as exactly one
// token with those bytes: as is when it is plain printable text (no
// spaces, quotes, backslashes, leading @ or #), else in "…" with escapes
// for every byte that is not printable ASCII or valid non-control UTF-8.
std::string Quote(std::string_view bytes);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_TOKENIZER_H_
