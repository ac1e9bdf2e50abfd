#include "node_names.hpp"

#include <unistd.h>

#include <algorithm>

#include "env.hpp"
#include "env_names.hpp"

namespace trainctl {

bool valid_node_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "-") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

std::string node_name() {
  if (!env_text(env_var::kSlurmdNodename).empty()) return env_text(env_var::kSlurmdNodename);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace trainctl
