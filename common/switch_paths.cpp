#include "switch_paths.hpp"

#include <sys/stat.h>

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

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::int64_t switch_token(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  const std::int64_t t = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return t > 0 ? t : 1;  // a file with mtime 0 still exists
}

}  // namespace trainctl
