// "Did you mean …?" for a mistyped command: the nearest word of a list by
// edit distance (Damerau–Levenshtein, optimal string alignment: an insert,
// a delete, a substitution or a swap of two neighbours each cost 1; so
// "gte" is 1 from "get"). Comparison ignores ASCII case.
//
// Thread-safety: pure functions.
#ifndef KV_TOOLS_KVCLI_SUGGEST_H_
#define KV_TOOLS_KVCLI_SUGGEST_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kv::kvcli {

// The edit distance between a and b (ASCII case ignored).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, or "" when none is near enough: at most
// 1 edit for words of up to 5 letters, 2 for longer ones, and fewer edits
// than the word has letters. Ties go to the earlier candidate.
std::string Nearest(std::string_view word,
                    const std::vector<std::string_view>& candidates);

}  // namespace kv::kvcli

#endif  // KV_TOOLS_KVCLI_SUGGEST_H_
