#include "did_you_mean.hpp"

#include <algorithm>

namespace trainctl {

int edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the optimal string alignment table: two back for a swap.
  const size_t n = b.size();
  std::vector<int> before(n + 1), prev(n + 1), cur(n + 1);
  for (size_t j = 0; j <= n; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= n; ++j) {
      const int replace = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[n];
}

std::string closest_word(std::string_view typed, const std::vector<std::string>& accepted) {
  if (typed.empty()) return "";
  const std::string* best = nullptr;
  int best_distance = 3;  // within 2 edits
  for (const auto& word : accepted) {
    if (word == typed) return "";  // accepted as it is: nothing to suggest
    const int d = edit_distance(typed, word);
    if (d < best_distance && 2 * d <= static_cast<int>(typed.size())) {
      best = &word;
      best_distance = d;
    }
  }
  if (best != nullptr) return *best;
  if (typed.size() < 3) return "";
  const std::string* only = nullptr;
  for (const auto& word : accepted) {
    if (word.compare(0, typed.size(), typed) != 0) continue;
    if (only != nullptr) return "";  // the start of several: no one of them is meant
    only = &word;
  }
  return only != nullptr ? *only : "";
}

}  // namespace trainctl
