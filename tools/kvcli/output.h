// kvcli's output: every command's reply goes through one Output, which
// writes it as text for a person or as one JSON object per reply for
// scripts (--format=json).
//
// Text: results on stdout; errors on stderr as "error: CODE: message"
// plus a "hint: …" line when there is something to try; "(not found)" on
// stdout when stdout is a terminal, on stderr otherwise (so a script's
// stdout carries only values). A `get` value is printed as it is, unless
// stdout is a terminal and the value holds bytes that are not safe to show
// (controls, invalid UTF-8): then in the "…" form with \xHH escapes that
// `put` reads back. --raw: the value's bytes exactly, no newline added.
// JSON: {"command":…,"status":"ok"|"not_found"|code, fields…, "error":…,
// "hint":…, "line":N (script mode, errors)}; byte strings are
// "name":"utf-8 text" when valid UTF-8, else "name_base64":"…".
//
// Thread-safety: one Output per thread.
#ifndef KV_TOOLS_KVCLI_OUTPUT_H_
#define KV_TOOLS_KVCLI_OUTPUT_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "kv/status.h"

namespace kv::kvcli {

enum class Format { kText, kJson };

struct OutputOptions {
  Format format = Format::kText;
  bool raw = false;         // --raw
  bool stdout_tty = false;  // stdout is a terminal
  // Text mode: appended as " (…)" to a usage error (Reply::usage): where
  // to read how the command is typed.
  std::string_view usage_ref = "type help";
  // Flush after every reply (a shell, one-shot); script mode flushes
  // after each batch instead (Flush()), which is what makes it fast.
  bool flush = true;
  // kvcli --pipe: successful replies are not printed (errors and "(not
  // found)" still are), as redis-cli --pipe.
  bool quiet = false;
};

// "…" JSON string of UTF-8 text (invalid bytes become U+FFFD).
std::string JsonQuote(std::string_view text);
// Standard base64 with padding.
std::string Base64(std::string_view bytes);

// The fields of one JSON reply object, in insertion order.
class JsonFields {
 public:
  // "name":"text", or "name_base64":"…" when bytes are not valid UTF-8.
  JsonFields& Bytes(std::string_view name, std::string_view bytes);
  JsonFields& Number(std::string_view name, uint64_t value);
  JsonFields& Double(std::string_view name, double value);
  JsonFields& Bool(std::string_view name, bool value);
  // `json` must be a complete JSON value (array, object).
  JsonFields& Raw(std::string_view name, std::string_view json);
  // "{…}" of the fields alone (for array elements).
  std::string Object() const { return "{" + body_ + "}"; }
  const std::string& body() const { return body_; }

 private:
  void Name(std::string_view name);
  std::string body_;
};

// What one command produced.
struct Reply {
  Status status;        // ok, not_found, or the error
  std::string hint;     // what to try, printed with an error
  std::string text;     // text mode: printed on stdout (ok and not_found)
  bool newline = true;  // text mode: end `text` with a newline
  JsonFields json;      // json mode: fields besides command/status/error
  int exit_code = -1;   // -1: from status (ExitCodeFor)
  std::string note;     // text mode: a line for stderr, also when ok
  bool usage = false;   // a usage error: one line, then usage_ref
};

// 0 ok, 1 not_found, 2 invalid_argument (the input was wrong), 3 the rest.
int ExitCodeFor(const Status& status);

class Output {
 public:
  Output(OutputOptions options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err) {}

  // How `get` shows a value (see the file comment); Reply::newline is
  // false for --raw.
  std::string Value(std::string_view bytes) const;
  // A value or key inside a listing (mget, scan): Quote() form, so that
  // one item stays on one line.
  std::string Item(std::string_view bytes) const;

  // Writes the reply of `command`; returns its exit code.
  int Print(std::string_view command, const Reply& reply);

  // Text mode: writes `text` to stdout now, before the reply (a scan's
  // items as they are found, so a long listing streams).
  void Stream(std::string_view text) { out_ << text; }

  // Script mode: the input line the next replies belong to (0: none).
  // Text errors and "(not found)" on stderr then start "line N: ", JSON
  // error replies carry "line":N.
  void set_line(size_t line) { line_ = line; }
  void Flush();

  const OutputOptions& options() const { return options_; }
  bool json() const { return options_.format == Format::kJson; }

 private:
  OutputOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  size_t line_ = 0;
};

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_OUTPUT_H_
