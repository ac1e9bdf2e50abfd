#include "metrics_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "dir_entries.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

std::string name_part(const std::string& v) {
  std::string out = v.empty() ? "none" : v.substr(0, 64);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '-';
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string metrics_file_name(const std::string& job, const std::string& step, const std::string& node) {
  return "trainctl_" + name_part(job) + "_" + name_part(step) + "_" + name_part(node) + ".prom";
}

std::string remove_job_metrics(const std::string& dir, const std::string& job) {
  if (!all_digits(job, 20)) return "not a job id: " + job;
  owned_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return dir + ": " + std::strerror(errno);
  // A file: trainctl_<job>_<step>_<node>.prom; a write's: .trainctl_<job>_..prom.new.<pid>.
  const std::string prefix = "trainctl_" + job + "_";
  std::string why;
  for (const std::string& name : dir_entry_names(fd.get())) {
    const bool file = starts_with(name, prefix) && ends_with(name, ".prom");
    const bool partial = starts_with(name, "." + prefix) && name.find(".prom.new.") != std::string::npos;
    if ((file || partial) && unlinkat(fd.get(), name.c_str(), 0) != 0 && errno != ENOENT && why.empty())
      why = dir + "/" + name + ": " + std::strerror(errno);
  }
  return why;
}

}  // namespace trainctl
