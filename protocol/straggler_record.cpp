#include "straggler_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "bad_nodes.hpp"
#include "bounded_append.hpp"
#include "gpu_memory.hpp"
#include "node_names.hpp"
#include "owned_fd.hpp"

namespace trainctl {

namespace {

// About 4,000 findings: trainwatch slow-nodes and people read the newest.
constexpr std::size_t kMaxSlowNodesBytes = 1 << 20;

// One append of one line (lines of several nodes do not interleave) to a file in a
// directory others may write (the log directory is often group-writable): a FIFO planted
// under the name must not block (O_NONBLOCK: with no reader the open fails, with one the
// type check refuses it), and neither a link nor another user's file takes the line.
std::string append_own_line(const std::string& path, const std::string& line) {
  const owned_fd fd(
      open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644));
  if (!fd) return errno == ENXIO ? "a FIFO, not a regular file" : std::strerror(errno);
  struct stat st {};
  std::string why;
  if (fstat(fd.get(), &st) != 0) st.st_mode = 0;  // then judged as no regular file
  if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid())
    why = "another user's file";
  else
    why = append_bounded(fd.get(), path, line, kMaxSlowNodesBytes, 0);  // others may hold its lock: no wait
  return why;
}

double factor_of(const straggler_finding& f) {
  return f.fastest_us > 0 ? static_cast<double>(f.slow_us) / static_cast<double>(f.fastest_us) : 0.0;
}

}  // namespace

std::string slow_nodes_line(const straggler_finding& f, std::int64_t now_s) {
  const std::string host = node_name(), gpus = gpu_uuids();
  char line[1024];
  const int n = std::snprintf(
      line, sizeof line, "%lld host=%s rank=%d job=%s step=%lld step_ms=%.1f fastest_ms=%.1f factor=%.2f gpus=%s\n",
      static_cast<long long>(now_s), host.c_str(), f.rank, f.job.empty() ? "-" : f.job.c_str(),
      static_cast<long long>(f.step), f.slow_us / 1000.0, f.fastest_us / 1000.0, factor_of(f),
      gpus.empty() ? "-" : gpus.c_str());
  std::string s(line, static_cast<std::size_t>(n < 0 ? 0 : std::min<int>(n, sizeof line - 1)));
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

std::string record_straggler(const straggler_finding& f, const std::string& log_dir) {
  const std::int64_t now = std::time(nullptr);
  std::string out;
  if (!log_dir.empty()) {
    const std::string path = log_dir + "/slow_nodes";
    const std::string why = append_own_line(path, slow_nodes_line(f, now));
    out += why.empty() ? "recorded in " + path + "\n" : "not appended to " + path + ": " + why + "\n";
  }
  bad_node b;
  b.when = now;
  b.host = node_name();
  b.job = f.job.empty() ? "-" : f.job;
  b.gpus = gpu_uuids();
  b.reason = straggler_reason(f.rank, factor_of(f));
  const std::string why = record_bad_node(bad_nodes_path(), b);
  if (!why.empty()) out += "could not remember " + b.host + " as a slow node: " + why + "\n";
  return out;
}

}  // namespace trainctl
