#include "job_environment.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace trainctl {

job_environment::job_environment(const std::string* export_value, env_lookup submitting)
    : submitting_(std::move(submitting)) {
  if (export_value == nullptr) return;
  const std::string& value = *export_value;
  keep_all_ = false;
  for (std::size_t start = 0; start <= value.size();) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (item == "ALL")
      keep_all_ = true;
    else if (eq != std::string::npos)
      set_[item.substr(0, eq)] = item.substr(eq + 1);
    else if (!item.empty() && item != "NONE")
      named_.insert(item);
    start = comma + 1;
  }
}

std::string job_environment::operator()(const char* name) const {
  if (const auto it = set_.find(name); it != set_.end()) return it->second;
  if (keep_all_ || named_.count(name) != 0 || std::strncmp(name, "SLURM_", 6) == 0) return submitting_(name);
  return "";
}

}  // namespace trainctl
