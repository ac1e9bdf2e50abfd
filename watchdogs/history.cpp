#include "history.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#include "alert_state.hpp"

namespace trainctl {

std::string history_file(const std::string& state_dir, const std::string& check, const std::string& target) {
  std::string key;
  for (char c : target) key += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return state_dir + "/" + check + "-history-" + key;
}

std::vector<std::pair<double, double>> record_history(const std::string& file, double now, double value) {
  std::vector<std::pair<double, double>> pts;
  std::ifstream in(file);
  double t, v;
  while (in >> t >> v)
    if (now - t < 86400 && now >= t) pts.emplace_back(t, v);
  pts.emplace_back(now, value);
  if (pts.size() > 500) pts.erase(pts.begin(), pts.end() - 500);
  std::ostringstream out;
  for (const auto& [a, b] : pts) out << static_cast<long long>(a) << " " << static_cast<long long>(b) << "\n";
  try {
    write_atomically(file, out.str());
  } catch (const std::exception&) {
    // No history this time: a trend is an extra, not the check.
  }
  return pts;
}

}  // namespace trainctl
