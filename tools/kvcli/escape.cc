#include "escape.h"

#include <cstdint>

namespace kv::kvcli {
namespace {

// Decodes the UTF-8 sequence at bytes[i]; returns its length (0 when
// malformed: bad lead or continuation byte, truncated, overlong, a
// surrogate or above U+10FFFF) and the code point in *cp.
size_t DecodeUtf8(std::string_view bytes, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(bytes[i + k]); };
  const uint8_t lead = b(0);
  size_t n;
  uint32_t v;
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  } else if ((lead & 0xe0) == 0xc0) {
    n = 2;
    v = lead & 0x1f;
  } else if ((lead & 0xf0) == 0xe0) {
    n = 3;
    v = lead & 0x0f;
  } else if ((lead & 0xf8) == 0xf0) {
    n = 4;
    v = lead & 0x07;
  } else {
    return 0;
  }
  if (i + n > bytes.size()) return 0;
  for (size_t k = 1; k < n; k++) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3f);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

bool IsFormatControl(uint32_t cp) {
  return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

}  // namespace

size_t SafeCharLength(std::string_view bytes, size_t i) {
  uint32_t cp = 0;
  const size_t n = DecodeUtf8(bytes, i, &cp);
  if (n == 0) return 0;
  if (n == 1) return cp >= 0x20 && cp < 0x7f ? 1 : 0;
  return cp >= 0xa0 && !IsFormatControl(cp) ? n : 0;
}

void AppendEscaped(std::string_view bytes, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < bytes.size();) {
    const char c = bytes[i];
    switch (c) {
      case '"':
        *out += "\\\"";
        i++;
        continue;
      case '\\':
        *out += "\\\\";
        i++;
        continue;
      case '\n':
        *out += "\\n";
        i++;
        continue;
      case '\r':
        *out += "\\r";
        i++;
        continue;
      case '\t':
        *out += "\\t";
        i++;
        continue;
      default:
        break;
    }
    const size_t n = SafeCharLength(bytes, i);
    if (n > 0) {
      out->append(bytes.substr(i, n));
      i += n;
      continue;
    }
    const auto u = static_cast<uint8_t>(c);
    *out += "\\x";
    *out += kHex[u >> 4];
    *out += kHex[u & 15];
    i++;
  }
}

bool IsDisplayable(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    if (bytes[i] == '\n' || bytes[i] == '\t') {
      i++;
      continue;
    }
    const size_t n = SafeCharLength(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool IsValidUtf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    uint32_t cp;
    const size_t n = DecodeUtf8(bytes, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace kv::kvcli
