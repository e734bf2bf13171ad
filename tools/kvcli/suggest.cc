#include "suggest.h"

#include <algorithm>

namespace kv::kvcli {
namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // d[i][j]: distance between a[0, i) and b[0, j); three rows suffice for
  // the swap rule.
  const size_t m = b.size();
  std::vector<size_t> before(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; j++) prev[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    cur[0] = i;
    for (size_t j = 1; j <= m; j++) {
      const bool same = Lower(a[i - 1]) == Lower(b[j - 1]);
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::string Nearest(std::string_view word,
                    const std::vector<std::string_view>& candidates) {
  const size_t limit = std::min<size_t>(word.size() <= 5 ? 1 : 2,
                                        word.empty() ? 0 : word.size() - 1);
  std::string best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

}  // namespace kv::kvcli
