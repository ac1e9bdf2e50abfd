#include "bad_nodes.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "env_names.hpp"
#include "node_names.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "private_files.hpp"

namespace trainctl {
namespace {

std::string no_spaces(std::string s) {
  for (char& c : s)
    if (c == ' ' || c == '\n' || c == '\t') c = '_';
  return s.empty() ? "-" : s;
}

std::string format_line(const bad_node& b) {
  std::string reason = b.reason;
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return std::to_string(b.when) + " " + no_spaces(b.host) + " job=" + no_spaces(b.job) + " gpus=" + no_spaces(b.gpus) +
         " reason=" + reason + "\n";
}

// The memory is trimmed when an append takes it past this size (1,000 findings or so).
constexpr std::size_t kTrimAboveBytes = std::size_t{128} * 1024;
constexpr std::size_t kKeepLines = 300;
constexpr std::chrono::seconds kKeepAtLeast{7 * 24 * 3600};

}  // namespace

std::vector<bad_node> read_bad_nodes(const std::string& path);

namespace {

// Rewrites the memory without what no reader will use: findings older than the keep
// horizon (the expiry, at least kKeepAtLeast), and past the newest kKeepLines. Called
// with the file locked; the new file replaces it by rename, so a reader sees the old or
// the new file whole, and a waiting append sees it was replaced.
void trim_bad_nodes(const std::string& path, std::int64_t now_s) {
  const std::int64_t keep_s = std::max(kKeepAtLeast, bad_node_expiry()).count();
  std::vector<bad_node> all = read_bad_nodes(path);
  std::vector<bad_node> kept;
  for (const auto& b : all)
    if (now_s - b.when < keep_s) kept.push_back(b);
  if (kept.size() > kKeepLines) kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(kKeepLines));
  const std::string tmp = path + ".trim." + std::to_string(getpid());
  owned_fd out(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out) return;
  std::string text;
  for (const auto& b : kept) text += format_line(b);
  const bool ok =
      write(out.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(out.get()) == 0;
  out.reset();
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

}  // namespace

std::string record_bad_node(const std::string& path, const bad_node& b) {
  if (path.empty()) return "no file for bad nodes (set TRAINCTL_BAD_NODES or HOME)";
  if (!valid_node_name(b.host))
    return "'" + b.host.substr(0, 80) + "' is not one node's name (accepted: letters, digits, '-', '_', '.')";
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_private_dirs(path.substr(0, slash)))
    return "cannot create " + path.substr(0, slash) + ": " + std::strerror(errno);
  const std::string line = format_line(b);
  // One write of one line in append mode, under the file's lock: findings of several
  // nodes do not interleave, and none goes into a file that a trim has just replaced.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const owned_fd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return "cannot open " + path + ": " + std::strerror(errno);
    flock(fd.get(), LOCK_EX);  // closing the descriptor drops it
    struct stat held {};
    struct stat named {};
    if (fstat(fd.get(), &held) == 0 && (lstat(path.c_str(), &named) != 0 || named.st_ino != held.st_ino))
      continue;  // trimmed meanwhile: append to the new file
    const bool ok = write(fd.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size());
    std::string why = ok ? "" : "cannot append to " + path + ": " + std::strerror(errno);
    if (ok && held.st_size + static_cast<off_t>(line.size()) > static_cast<off_t>(kTrimAboveBytes))
      trim_bad_nodes(path, b.when);
    return why;
  }
  return "cannot append to " + path + ": it keeps being replaced";
}

std::string forget_bad_node(const std::string& path, const std::string& host, std::size_t* removed) {
  *removed = 0;
  if (!valid_node_name(host))
    return "'" + host.substr(0, 80) + "' is not one node's name (accepted: letters, digits, '-', '_', '.')";
  return forget_findings(
      path, [&host](const bad_node& b) { return b.host == host; }, removed);
}

std::string forget_findings(const std::string& path, const std::function<bool(const bad_node&)>& which,
                            std::size_t* removed, std::vector<bad_node>* forgotten) {
  *removed = 0;
  if (path.empty()) return "no file for bad nodes (set TRAINCTL_BAD_NODES or HOME)";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const owned_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) return errno == ENOENT ? "" : "cannot open " + path + ": " + std::strerror(errno);
    flock(fd.get(), LOCK_EX);  // closing the descriptor drops it
    struct stat held {};
    struct stat named {};
    if (fstat(fd.get(), &held) != 0 || !S_ISREG(held.st_mode)) return path + " is not a regular file";
    if (lstat(path.c_str(), &named) != 0 || named.st_ino != held.st_ino) continue;  // replaced: forget in the new one
    std::vector<bad_node> kept, gone;
    for (const auto& b : read_bad_nodes(path)) {
      if (which(b)) {
        ++*removed;
        gone.push_back(b);
      } else {
        kept.push_back(b);
      }
    }
    std::string why;
    if (*removed > 0) {
      const std::string tmp = path + ".forget." + std::to_string(getpid());
      owned_fd out(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!out) {
        why = "cannot create " + tmp + ": " + std::strerror(errno);
      } else {
        std::string text;
        for (const auto& b : kept) text += format_line(b);
        const bool ok =
            write(out.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(out.get()) == 0;
        out.reset();
        if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
          why = "cannot rewrite " + path + ": " + std::strerror(errno);
          unlink(tmp.c_str());
        }
      }
    }
    if (!why.empty()) *removed = 0;
    if (why.empty() && forgotten != nullptr) *forgotten = gone;
    return why;
  }
  return "cannot rewrite " + path + ": it keeps being replaced";
}

std::vector<bad_node> read_bad_nodes(const std::string& path) {
  std::vector<bad_node> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    bad_node b;
    std::string job, gpus;
    if (!(words >> b.when >> b.host >> job >> gpus) || job.compare(0, 4, "job=") != 0 ||
        gpus.compare(0, 5, "gpus=") != 0 || !valid_node_name(b.host))
      continue;
    b.job = job.substr(4);
    b.gpus = gpus.substr(5);
    const size_t r = line.find(" reason=");
    b.reason = r == std::string::npos ? "" : line.substr(r + 8);
    out.push_back(b);
  }
  return out;
}

std::chrono::seconds bad_node_expiry() {
  try {
    const std::string e = env_text(env_var::kTrainctlBadNodeExpiry);
    if (!e.empty()) return std::chrono::seconds(parse_duration(e, 'h').count() / 1000);
  } catch (const parse_error&) {
    // the default below
  }
  return std::chrono::hours(24);
}

bool is_suspicion(const bad_node& b) { return b.reason.rfind(kSuspectedCrash, 0) == 0; }

namespace {
constexpr std::string_view kConvicted = "crashed (";
constexpr std::string_view kInRank = " in rank ";
}  // namespace

std::string crash_finding_reason(const std::string& how, int rank, const std::string& array, const std::string& lead) {
  const std::string who = rank >= 0 ? std::string(kInRank) + std::to_string(rank) : std::string(" in a rank");
  return std::string(kConvicted) + how + who + (array.empty() ? "" : kOfArray + array) +
         ", the first death of the job; " + lead + ")";
}

std::string straggler_reason(int rank, double factor) {
  char reason[128];
  std::snprintf(reason, sizeof reason, "slow (rank %d, x%.2f the fastest rank's step time)", rank, factor);
  return reason;
}

bool parse_straggler_reason(const std::string& reason, int* rank, double* factor) {
  *rank = -1;
  *factor = 0;
  if (std::sscanf(reason.c_str(), "slow (rank %d, x%lf", rank, factor) == 2 && *rank >= 0 && *factor > 0) return true;
  *rank = -1;
  *factor = 0;
  return false;
}

bool same_rank_died_first_elsewhere(const bad_node& b, const std::string& host, int rank, const std::string& array) {
  if (rank < 0 || array.empty() || b.host == host || b.reason.rfind(kConvicted, 0) != 0) return false;
  const std::string named = std::string(kInRank) + std::to_string(rank) + kOfArray + array + ",";
  const std::size_t end_of_how = b.reason.find(kInRank);
  return end_of_how != std::string::npos && b.reason.compare(end_of_how, named.size(), named) == 0;
}

namespace {

std::vector<bad_node> recent_findings(const std::vector<bad_node>& all, std::int64_t now_s,
                                      std::chrono::seconds expiry) {
  std::vector<bad_node> recent;
  for (const auto& b : all)
    if (now_s - b.when < expiry.count()) recent.push_back(b);
  return recent;
}

}  // namespace

std::vector<std::string> suspected_nodes(const std::vector<bad_node>& all, std::int64_t now_s,
                                         std::chrono::seconds expiry) {
  const std::vector<bad_node> recent = recent_findings(all, now_s, expiry);
  std::set<std::string> found;  // hosts with a finding that is not a suspicion
  for (const auto& b : recent)
    if (!is_suspicion(b)) found.insert(b.host);
  std::vector<std::string> out;
  for (auto it = recent.rbegin(); it != recent.rend(); ++it)
    if (is_suspicion(*it) && !found.count(it->host) && std::find(out.begin(), out.end(), it->host) == out.end())
      out.push_back(it->host);
  return out;
}

std::vector<std::string> nodes_to_exclude(const std::vector<bad_node>& all, std::int64_t now_s,
                                          std::chrono::seconds expiry, std::size_t cap) {
  std::vector<bad_node> recent = recent_findings(all, now_s, expiry);
  recent.erase(std::remove_if(recent.begin(), recent.end(), is_suspicion), recent.end());
  std::stable_sort(recent.begin(), recent.end(), [](const bad_node& a, const bad_node& b) { return a.when > b.when; });
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& b : recent) {
    if (out.size() >= cap) break;
    if (seen.insert(b.host).second) out.push_back(b.host);
  }
  return out;
}

}  // namespace trainctl
