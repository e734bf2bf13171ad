#include "output.h"

#include <cstdio>

#include "escape.h"
#include "tokenizer.h"

namespace kv::kvcli {

std::string JsonQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); i++) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // Copy a well-formed UTF-8 sequence whole; anything else is U+FFFD.
      size_t n = 1;
      while (n < 4 && i + n < text.size() &&
             (static_cast<unsigned char>(text[i + n]) & 0xc0) == 0x80) {
        n++;
      }
      if (IsValidUtf8(text.substr(i, n))) {
        out.append(text.substr(i, n));
        i += n - 1;
      } else {
        out += "\\ufffd";
      }
    }
  }
  out += '"';
  return out;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; k++) {
      v = (v << 8) | (k < n ? static_cast<uint8_t>(bytes[i + k]) : 0);
    }
    for (size_t k = 0; k < 4; k++) {
      out += k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
    }
  }
  return out;
}

void JsonFields::Name(std::string_view name) {
  if (!body_.empty()) body_ += ',';
  body_ += JsonQuote(name);
  body_ += ':';
}

JsonFields& JsonFields::Bytes(std::string_view name, std::string_view bytes) {
  if (IsValidUtf8(bytes)) {
    Name(name);
    body_ += JsonQuote(bytes);
  } else {
    Name(std::string(name) + "_base64");
    body_ += '"' + Base64(bytes) + '"';
  }
  return *this;
}

JsonFields& JsonFields::Number(std::string_view name, uint64_t value) {
  Name(name);
  body_ += std::to_string(value);
  return *this;
}

JsonFields& JsonFields::Double(std::string_view name, double value) {
  Name(name);
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3f", value);
  body_ += buf;
  return *this;
}

JsonFields& JsonFields::Bool(std::string_view name, bool value) {
  Name(name);
  body_ += value ? "true" : "false";
  return *this;
}

JsonFields& JsonFields::Raw(std::string_view name, std::string_view json) {
  Name(name);
  body_.append(json);
  return *this;
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kNotFound:
      return 1;
    case StatusCode::kInvalidArgument:
      return 2;
    default:
      return 3;
  }
}

std::string Output::Value(std::string_view bytes) const {
  if (options_.raw || !options_.stdout_tty) return std::string(bytes);
  if (!bytes.empty() && bytes[0] != '"' && IsDisplayable(bytes)) {
    return std::string(bytes);
  }
  std::string out = "\"";
  AppendEscaped(bytes, &out);
  return out + '"';
}

std::string Output::Item(std::string_view bytes) const { return Quote(bytes); }

void Output::Flush() {
  out_ << std::flush;
  err_ << std::flush;
}

int Output::Print(std::string_view command, const Reply& r) {
  const int code = r.exit_code >= 0 ? r.exit_code : ExitCodeFor(r.status);
  const bool failed = !r.status.ok() || code != 0;
  if (options_.quiet && !failed) return code;
  if (json()) {
    std::string line = "{\"command\":" + JsonQuote(command) + ",\"status\":" +
                       JsonQuote(StatusCodeName(r.status.code()));
    if (!r.json.body().empty()) line += "," + r.json.body();
    if (!r.status.ok() && !r.status.IsNotFound()) {
      line += ",\"error\":" + JsonQuote(r.status.message());
    }
    if (!r.status.ok() && !r.hint.empty()) {
      line += ",\"hint\":" + JsonQuote(r.hint);
    }
    if (line_ != 0 && !r.status.ok() && !r.status.IsNotFound())
      line += ",\"line\":" + std::to_string(line_);
    out_ << line << "}\n";
    if (options_.flush) out_ << std::flush;
    return code;
  }
  const std::string where =
      line_ != 0 ? "line " + std::to_string(line_) + ": " : "";
  if (r.status.ok() || (r.status.IsNotFound() && !r.text.empty())) {
    // A reply that is ok overall but carries per-key errors (mput, del of
    // several keys) prints them in its text; quiet mode prints it whole.
    out_ << r.text;
    if (r.newline) out_ << "\n";
    if (options_.flush) out_ << std::flush;
    if (!r.note.empty()) {
      out_ << std::flush;
      err_ << where << r.note << "\n";
      if (options_.flush) err_ << std::flush;
    }
    return code;
  }
  if (r.status.IsNotFound() && r.exit_code < 0) {
    std::ostream& s = options_.stdout_tty ? out_ : err_;
    s << (options_.stdout_tty ? "" : where) << "(not found)\n";
    if (options_.flush) s << std::flush;
    return code;
  }
  err_ << where << "error: " << r.status.ToString();
  if (r.usage && !options_.usage_ref.empty()) {
    err_ << " (" << options_.usage_ref << ")";
  }
  err_ << "\n";
  if (!r.hint.empty()) err_ << "hint: " << r.hint << "\n";
  if (options_.flush) err_ << std::flush;
  return code;
}

}  // namespace kv::kvcli
