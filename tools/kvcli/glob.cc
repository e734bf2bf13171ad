#include "glob.h"

namespace kv::kvcli {
namespace {

// Matches the set at p[i] ('[' already consumed) against c; *end is the
// index after ']'. False in *closed when there is no ']'.
bool MatchSet(std::string_view p, size_t i, char c, size_t* end, bool* closed) {
  bool negate = false;
  if (i < p.size() && p[i] == '^') {
    negate = true;
    i++;
  }
  bool hit = false;
  bool first = true;
  for (; i < p.size(); i++) {
    if (p[i] == ']' && !first) {
      *end = i + 1;
      *closed = true;
      return hit != negate;
    }
    first = false;
    char lo = p[i];
    if (lo == '\\' && i + 1 < p.size()) lo = p[++i];
    char hi = lo;
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      hi = p[i + 2];
      if (hi == '\\' && i + 3 < p.size()) hi = p[++i + 2];
      i += 2;
    }
    const auto uc = static_cast<unsigned char>(c);
    if (static_cast<unsigned char>(lo) <= uc &&
        uc <= static_cast<unsigned char>(hi)) {
      hit = true;
    }
  }
  *closed = false;
  return false;
}

}  // namespace

bool GlobMatch(std::string_view p, std::string_view k) {
  // Iterative with one backtrack point (the last '*'): linear in practice,
  // never exponential.
  size_t pi = 0, ki = 0;
  size_t star_p = std::string_view::npos, star_k = 0;
  while (ki < k.size()) {
    if (pi < p.size()) {
      const char c = p[pi];
      if (c == '*') {
        star_p = pi++;
        star_k = ki;
        continue;
      }
      if (c == '?') {
        pi++;
        ki++;
        continue;
      }
      if (c == '[') {
        size_t end = 0;
        bool closed = false;
        const bool hit = MatchSet(p, pi + 1, k[ki], &end, &closed);
        if (closed) {
          if (hit) {
            pi = end;
            ki++;
            continue;
          }
        } else if (k[ki] == '[') {
          pi++;
          ki++;
          continue;
        }
      } else {
        char lit = c;
        size_t next = pi + 1;
        if (c == '\\' && pi + 1 < p.size()) {
          lit = p[pi + 1];
          next = pi + 2;
        }
        if (lit == k[ki]) {
          pi = next;
          ki++;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    ki = ++star_k;
  }
  while (pi < p.size() && p[pi] == '*') pi++;
  return pi == p.size();
}

std::string GlobPrefix(std::string_view p) {
  std::string out;
  for (size_t i = 0; i < p.size(); i++) {
    const char c = p[i];
    if (c == '*' || c == '?' || c == '[') break;
    if (c == '\\' && i + 1 < p.size()) {
      out += p[++i];
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace kv::kvcli
