#include "tokenizer.h"

#include "escape.h"

namespace kv::kvcli {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status Error(size_t column, const std::string& what) {
  return Status::InvalidArgument(what + " at column " +
                                 std::to_string(column + 1));
}

// Resolves the escape whose backslash is at line[*i]; advances *i past it.
// In '…' (single) only \' and \\ are escapes; other backslashes are kept.
Status Unescape(std::string_view line, size_t* i, bool single,
                std::string* out) {
  const size_t at = *i;
  if (at + 1 >= line.size()) return Error(at, "trailing backslash");
  const char c = line[at + 1];
  *i = at + 2;
  if (single) {
    if (c == '\'' || c == '\\') {
      *out += c;
    } else {
      *out += '\\';
      *i = at + 1;
    }
    return Status::Ok();
  }
  switch (c) {
    case 'n':
      *out += '\n';
      return Status::Ok();
    case 'r':
      *out += '\r';
      return Status::Ok();
    case 't':
      *out += '\t';
      return Status::Ok();
    case '0':
      *out += '\0';
      return Status::Ok();
    case 'a':
      *out += '\a';
      return Status::Ok();
    case 'b':
      *out += '\b';
      return Status::Ok();
    case 'f':
      *out += '\f';
      return Status::Ok();
    case 'v':
      *out += '\v';
      return Status::Ok();
    case 'e':
      *out += '\x1b';
      return Status::Ok();
    case '\\':
    case '"':
    case '\'':
    case ' ':
    case '@':
    case '#':
      *out += c;
      return Status::Ok();
    case 'x': {
      const int hi = at + 2 < line.size() ? HexDigit(line[at + 2]) : -1;
      const int lo = at + 3 < line.size() ? HexDigit(line[at + 3]) : -1;
      if (hi < 0 || lo < 0) {
        return Error(at, "\\x needs two hex digits (e.g. \\x00)");
      }
      *out += static_cast<char>(hi * 16 + lo);
      *i = at + 4;
      return Status::Ok();
    }
    default:
      return Error(at, std::string("unknown escape \\") + c +
                           " (use \\\\ for a backslash)");
  }
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view line) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (true) {
    while (i < line.size() && IsSpace(line[i])) i++;
    if (i >= line.size() || line[i] == '#') break;
    Token t;
    if (line[i] == '@') {
      t.from_file = true;
      i++;
    }
    while (i < line.size() && !IsSpace(line[i])) {
      const char c = line[i];
      if (c == '\\') {
        KV_RETURN_IF_ERROR(Unescape(line, &i, false, &t.text));
      } else if (c == '"' || c == '\'') {
        const size_t open = i++;
        while (true) {
          if (i >= line.size()) {
            return Error(open, std::string("unterminated ") + c + " quote");
          }
          if (line[i] == c) {
            i++;
            break;
          }
          if (line[i] == '\\') {
            KV_RETURN_IF_ERROR(Unescape(line, &i, c == '\'', &t.text));
          } else {
            t.text += line[i++];
          }
        }
      } else {
        t.text += c;
        i++;
      }
    }
    tokens.push_back(std::move(t));
  }
  return tokens;
}

std::string Quote(std::string_view bytes) {
  bool plain = !bytes.empty() && bytes[0] != '@' && bytes[0] != '#';
  for (size_t i = 0; plain && i < bytes.size();) {
    const char c = bytes[i];
    if (c == ' ' || c == '"' || c == '\'' || c == '\\') {
      plain = false;
    } else {
      const size_t n = SafeCharLength(bytes, i);
      if (n == 0) plain = false;
      i += n;
    }
  }
  if (plain) return std::string(bytes);
  std::string out = "\"";
  AppendEscaped(bytes, &out);
  out += '"';
  return out;
}

}  // namespace kv::kvcli
