#include "switch_paths.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace trainctl {

std::string default_switch_path(const std::string& kind, const std::string& submit_dir, const std::string& job_name) {
  std::string dir = submit_dir;
  if (dir.empty()) {
    char* cwd = getcwd(nullptr, 0);
    dir = cwd != nullptr ? cwd : ".";
    std::free(cwd);
  }
  std::string name;
  for (char c : job_name.empty() ? std::string("trainctl") : job_name)
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  if (name.size() > 100) name.resize(100);
  return dir + "/" + kind + "-" + name;
}

}  // namespace trainctl
