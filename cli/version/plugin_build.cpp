#include "plugin_build.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "build_id.hpp"
#include "owned_fd.hpp"
#include "switch_paths.hpp"  // dir_of

namespace trainctl::cli {
namespace {

constexpr int kMaxIncludeDepth = 4;
constexpr off_t kMaxPluginBytes = 64 << 20;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool iequal(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// slurm.conf's PlugStackConfig (key=value, the key in any case), else plugstack.conf beside it.
std::string plugstack_of(const std::string& slurm_conf, std::string* problem) {
  std::ifstream in(slurm_conf);
  if (!in) {
    *problem = "cannot read " + slurm_conf + ": " + std::strerror(errno);
    return "";
  }
  for (std::string line; std::getline(in, line);) {
    const std::string text = line.substr(0, line.find('#'));
    const size_t eq = text.find('=');
    if (eq == std::string::npos) continue;
    const std::vector<std::string> key = words(text.substr(0, eq)), value = words(text.substr(eq + 1));
    if (key.size() == 1 && iequal(key[0], "PlugStackConfig") && value.size() == 1) return value[0];
  }
  return dir_of(slurm_conf) + "/plugstack.conf";
}

// The first line of conf (or of a file it includes) that loads trainctl_spank.so.
bool find_line(const std::string& conf, int depth, std::string* path) {
  std::ifstream in(conf);
  for (std::string line; in && std::getline(in, line);) {
    const std::vector<std::string> w = words(line);
    if (w.size() >= 2 && (w[0] == "optional" || w[0] == "required")) {
      const size_t slash = w[1].rfind('/');
      if ((slash == std::string::npos ? w[1] : w[1].substr(slash + 1)) == "trainctl_spank.so") {
        *path = w[1];
        return true;
      }
    } else if (w.size() == 2 && w[0] == "include" && depth < kMaxIncludeDepth) {
      const std::string pattern = w[1][0] == '/' ? w[1] : dir_of(conf) + "/" + w[1];
      glob_t g{};
      if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i)
          if (find_line(g.gl_pathv[i], depth + 1, path)) {
            globfree(&g);
            return true;
          }
      globfree(&g);
    }
  }
  return false;
}

// The marker's text in the plugin's file: a regular file, read, never run, never through a link.
std::string build_in(const std::string& path, std::string* problem) {
  owned_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  struct stat st {};
  if (!fd || fstat(fd.get(), &st) != 0) {
    *problem = "cannot read " + path + ": " + std::strerror(errno);
    return "";
  }
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxPluginBytes) {
    *problem = path + " is not a plugin file (not a regular file, or over 64 MiB)";
    return "";
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (pread(fd.get(), bytes.data(), bytes.size(), 0) != st.st_size) {
    *problem = "cannot read " + path + " whole";
    return "";
  }
  const size_t at = bytes.find(TRAINCTL_PLUGIN_BUILD_MARKER);
  build_id b;
  if (at != std::string::npos) {
    const size_t from = at + std::strlen(TRAINCTL_PLUGIN_BUILD_MARKER);
    std::string text = bytes.substr(from, bytes.find('\0', from) - from);
    if (parse_build(text, &b)) return text;
  }
  *problem = path + " names no trainctl build (a plugin built before builds were marked, or not trainctl's)";
  return "";
}

}  // namespace

plugin_found find_plugin(const std::string& slurm_conf) {
  plugin_found found;
  found.conf = plugstack_of(slurm_conf, &found.problem);
  if (found.conf.empty()) return found;
  if (access(found.conf.c_str(), R_OK) != 0) {
    found.problem = "no " + found.conf + " (" + std::strerror(errno) + "): SLURM loads no plugin here";
    return found;
  }
  if (!find_line(found.conf, 0, &found.path)) {
    found.problem = "no line of " + found.conf + " loads trainctl_spank.so: jobs here use trainctl-run";
    return found;
  }
  if (found.path[0] != '/') {
    found.problem = found.conf + " names the plugin by a relative path (" + found.path + ", under PluginDir)";
    return found;
  }
  found.build = build_in(found.path, &found.problem);
  return found;
}

}  // namespace trainctl::cli
