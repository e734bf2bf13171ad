// A guard to run before nlohmann::json::parse on bytes from a peer: the
// parser recurses once per nested array or object, so a few megabytes of
// "[[[[..." would exhaust the stack. JsonNestingWithin scans the text
// (strings and their escapes skipped) and says whether no value nests
// deeper than `max_depth`.
#ifndef KV_CLUSTER_JSON_DEPTH_H_
#define KV_CLUSTER_JSON_DEPTH_H_

#include <cstddef>
#include <string_view>

namespace kv::cluster {

inline bool JsonNestingWithin(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        i++;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return true;
}

}  // namespace kv::cluster

#endif  // KV_CLUSTER_JSON_DEPTH_H_
