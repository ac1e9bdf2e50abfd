#include "hostlist.hpp"

#include <cctype>
#include <cstdlib>

namespace trainctl {
namespace {

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (const char c : s)
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  return true;
}

// One "a" or "a-b" of a bracket group, appended as prefix+number+suffix.
bool expand_range(const std::string& range, const std::string& prefix, const std::string& suffix, std::size_t limit,
                  std::vector<std::string>* out) {
  const std::size_t dash = range.find('-');
  const std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
  if (!all_digits(lo) || !all_digits(hi)) return false;
  const long a = std::strtol(lo.c_str(), nullptr, 10), b = std::strtol(hi.c_str(), nullptr, 10);
  if (b < a || static_cast<std::size_t>(b - a) >= limit - out->size()) return false;
  for (long n = a; n <= b; ++n) {
    std::string digits = std::to_string(n);
    if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
    out->push_back(prefix + digits + suffix);
  }
  return true;
}

// One comma-separated item: "name" or "prefix[ranges]suffix".
bool expand_item(const std::string& item, std::size_t limit, std::vector<std::string>* out) {
  const std::size_t open = item.find('[');
  if (open == std::string::npos) {
    if (item.empty() || item.find(']') != std::string::npos || out->size() >= limit) return false;
    out->push_back(item);
    return true;
  }
  const std::size_t close = item.find(']', open);
  if (close == std::string::npos) return false;
  const std::string prefix = item.substr(0, open), suffix = item.substr(close + 1);
  if (suffix.find_first_of("[]") != std::string::npos) return false;
  const std::string ranges = item.substr(open + 1, close - open - 1);
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = ranges.find(',', from);
    if (!expand_range(ranges.substr(from, comma - from), prefix, suffix, limit, out)) return false;
    if (comma == std::string::npos) return true;
    from = comma + 1;
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list, std::size_t limit) {
  std::vector<std::string> out;
  std::size_t from = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) return {};
    if (c != ',' || depth != 0) continue;
    if (!expand_item(list.substr(from, i - from), limit, &out)) return {};
    from = i + 1;
  }
  return out;
}

}  // namespace trainctl
