// Stragglers (slow_nodes, written by the ranks) and bad nodes coming back (bad_nodes,
// written by the supervisors), as trainwatch results with their figures.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "bad_nodes.hpp"
#include "checks.hpp"
#include "private_files.hpp"

namespace trainctl {
namespace {

std::string field(const std::string& line, const std::string& name) {
  const std::string key = " " + name + "=";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return line.substr(start, line.find(' ', start) - start);
}

std::string ago(std::int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + " s ago";
  if (seconds < 7200) return std::to_string(seconds / 60) + " min ago";
  return std::to_string(seconds / 3600) + " h ago";
}

}  // namespace

std::vector<slow_node> parse_slow_nodes(const std::string& text) {
  std::vector<slow_node> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    slow_node s;
    char* end = nullptr;
    s.when = std::strtoll(line.c_str(), &end, 10);
    s.host = field(line, "host");
    s.rank = field(line, "rank");
    s.job = field(line, "job");
    s.factor = std::atof(field(line, "factor").c_str());
    if (end == line.c_str() || s.when <= 0 || s.host.empty() || s.factor <= 0) continue;
    out.push_back(s);
  }
  return out;
}

// The stragglers this user's supervisors also remembered as slow nodes (the bad-node
// memory, private): every finding slow_nodes would hold, of every run of the user's.
std::vector<slow_node> remembered_stragglers(const std::string& bad_nodes_file) {
  std::vector<slow_node> out;
  for (const bad_node& b : read_bad_nodes(bad_nodes_file)) {
    int rank = -1;
    double factor = 0;
    if (!parse_straggler_reason(b.reason, &rank, &factor)) continue;
    out.push_back({b.when, b.host, std::to_string(rank), b.job, factor});
  }
  return out;
}

check_result check_slow_nodes(const std::string& path, std::chrono::milliseconds max_age, std::int64_t now_s,
                              const std::string& bad_nodes_file) {
  check_result r;
  r.check = "slow-nodes";
  r.target = path;
  // The log directory is often group-writable: the file is read only as this user's
  // regular file, never through a link (to /dev/zero) or from a FIFO (open would wait
  // forever), and only its newest 1 MiB (a cut first line is no record). Anything else
  // under its name (another user's file, a link, a FIFO) is skipped with one line: the
  // supervisors never append there, and they remember every straggler in the user's own
  // bad-node memory too, which is read instead, so the check is never pinned.
  std::string why, skipped;
  std::vector<slow_node> found;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && (!S_ISREG(st.st_mode) || st.st_uid != getuid())) {
    skipped = path + " is not a regular file of this user (skipped); from your bad-node memory";
    found = remembered_stragglers(bad_nodes_file.empty() ? bad_nodes_path() : bad_nodes_file);
  } else {
    const std::string text = read_private(path, 1 << 20, &why, true);
    if (!why.empty()) {
      r.status = kUnknown;
      r.text = why;
      return r;
    }
    found = parse_slow_nodes(text);
  }
  std::vector<slow_node> recent;
  for (const auto& s : found)
    if (now_s - s.when <= max_age.count() / 1000) recent.push_back(s);
  double worst = 0;
  std::string names;
  for (auto it = recent.rbegin(); it != recent.rend(); ++it) {
    if (names.size() < 300) {
      char one[256];
      std::snprintf(one, sizeof one, "%s%s rank %s x%.2f (job %s, %s)", names.empty() ? "" : "; ", it->host.c_str(),
                    it->rank.c_str(), it->factor, it->job.c_str(), ago(now_s - it->when).c_str());
      names += one;
    }
    worst = std::max(worst, it->factor);
  }
  r.figures = {{"stragglers", static_cast<double>(recent.size())}, {"worst_factor", worst}};
  if (recent.empty()) {
    r.status = kOk;
    r.text = "no straggler reported in the last " + format_duration(max_age);
  } else {
    r.status = kWarning;
    r.text = std::to_string(recent.size()) + " straggler report" + (recent.size() == 1 ? "" : "s") + ": " + names;
  }
  if (!skipped.empty()) r.text = skipped + ", " + r.text;
  return r;
}

check_result check_bad_node_back(const std::string& name, const std::vector<std::string>& nodes,
                                 const std::string& bad_nodes_file, std::chrono::seconds expiry, std::int64_t now_s) {
  check_result r;
  r.check = "job-on-bad-node";
  r.target = name;
  r.labels = {{"job", name}};
  const auto all = read_bad_nodes(bad_nodes_file);
  const auto bad = nodes_to_exclude(all, now_s, expiry, 1 << 20);
  std::string back;
  int n = 0;
  for (const auto& node : nodes)
    for (const auto& b : bad)
      if (b == node) {
        ++n;
        for (auto it = all.rbegin(); it != all.rend(); ++it)
          if (it->host == node) {
            back += (back.empty() ? "" : "; ") + node + " (" + it->reason + ", " + ago(now_s - it->when) + ")";
            break;
          }
      }
  r.figures = {{"bad_nodes_in_job", static_cast<double>(n)}};
  if (n == 0) {
    r.status = kOk;
    r.text = nodes.empty() ? "no running job of that name"
                           : "none of the job's " + std::to_string(nodes.size()) + " nodes is remembered as bad";
  } else {
    r.status = kWarning;
    r.text = "the job runs on a node remembered as bad: " + back;
  }
  return r;
}

}  // namespace trainctl
