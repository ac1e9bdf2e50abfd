#include "save_times.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "bad_nodes.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

// Far more lines than a year of saves makes. A line is written only for a save longer
// than the longest its writer had read, so the longest is among the newest lines: the
// file is read from its end (read from the start, the newest records of a file past
// this size were never seen and auto chose from old ones).
constexpr std::size_t kMaxRead = 1 << 20;

}  // namespace

std::string save_times_dir() { return user_state_path("TRAINCTL_SAVE_TIMES_DIR", "save_times"); }

std::string save_times_path(const std::string& key) {
  const std::string dir = save_times_dir();
  if (dir.empty() || !all_digits(key, 20)) return "";
  return dir + "/" + key;
}

std::int64_t longest_recorded_save_ms(const std::string& path, std::string* why) {
  std::string text = read_private(path, kMaxRead, why, true);
  // A full window may start inside a line: it starts at the next whole one (a file of
  // exactly this size loses its oldest line, never its longest).
  const std::size_t first_end = text.find('\n');
  if (text.size() == kMaxRead && first_end != std::string::npos) text.erase(0, first_end + 1);
  std::int64_t longest = 0;
  for (size_t at = 0; (at = text.find(" save_ms=", at)) != std::string::npos;) {
    at += 9;
    const std::int64_t ms = std::strtoll(text.c_str() + at, nullptr, 10);
    if (ms > 0 && ms < std::int64_t{7} * 24 * 3600 * 1000) longest = std::max(longest, ms);
  }
  return longest;
}

std::string record_save_time(const std::string& path, const std::string& job, const std::string& node,
                             std::int64_t save_ms) {
  if (path.empty()) return "no file for save times (set TRAINCTL_SAVE_TIMES_DIR or HOME)";
  return append_private(path, std::to_string(std::time(nullptr)) + " job=" + (job.empty() ? "-" : job) + " node=" +
                                  (valid_node_name(node) ? node : "-") + " save_ms=" + std::to_string(save_ms) + "\n");
}

std::map<std::string, std::int64_t> longest_recorded_phases(const std::string& path, std::string* why) {
  std::map<std::string, std::int64_t> longest;
  std::string text = read_private(path, kMaxRead, why, true);
  const std::size_t first_end = text.find('\n');
  if (text.size() == kMaxRead && first_end != std::string::npos) text.erase(0, first_end + 1);
  constexpr std::int64_t kWeekMs = std::int64_t{7} * 24 * 3600 * 1000;  // longer is no duration of ours
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(line_start, end - line_start);
    line_start = end + 1;
    std::string name;
    std::int64_t ms = 0;
    const std::size_t save = line.find(" save_ms="), phase = line.find(" phase="), at = line.find(" ms=");
    if (save != std::string::npos) {
      name = "save";
      ms = std::strtoll(line.c_str() + save + 9, nullptr, 10);
    } else if (phase != std::string::npos && at != std::string::npos && at > phase) {
      name = line.substr(phase + 7, at - phase - 7);
      ms = std::strtoll(line.c_str() + at + 4, nullptr, 10);
    }
    if (name.empty() || name.size() > 32 || ms <= 0 || ms >= kWeekMs) continue;
    longest[name] = std::max(longest[name], ms);
  }
  return longest;
}

std::string record_phase_time(const std::string& path, const std::string& job, const std::string& node,
                              const std::string& phase, std::int64_t ms) {
  if (path.empty()) return "no file for phase times (set TRAINCTL_SAVE_TIMES_DIR or HOME)";
  if (phase == "save") return record_save_time(path, job, node, ms);
  return append_private(path, std::to_string(std::time(nullptr)) + " job=" + (job.empty() ? "-" : job) +
                                  " node=" + (valid_node_name(node) ? node : "-") + " phase=" + phase +
                                  " ms=" + std::to_string(ms) + "\n");
}

auto_graceful auto_graceful_exit(std::int64_t longest_ms, std::int64_t limit_s) {
  using std::chrono::milliseconds;
  auto_graceful a;
  if (longest_ms <= 0) {
    a.graceful = kAutoFirstTask;
    a.why = "no save seen yet in this job array: " + format_duration(kAutoFirstTask);
  } else {
    const auto wanted =
        milliseconds(static_cast<std::int64_t>(static_cast<double>(longest_ms) * kAutoSaveFactor)) + kAutoMargin;
    a.graceful = std::max(kAutoFloor, milliseconds((wanted.count() + 999) / 1000 * 1000));
    char line[160];
    std::snprintf(
        line, sizeof line, "the longest save in this job array took %.1f s: x%.1f + %s margin%s",
        static_cast<double>(longest_ms) / 1000.0, kAutoSaveFactor, format_duration(kAutoMargin).c_str(),
        a.graceful == kAutoFloor && wanted < kAutoFloor ? (", at least " + format_duration(kAutoFloor)).c_str() : "");
    a.why = line;
  }
  // A graceful exit of the whole time limit would leave no training at all.
  if (limit_s > 0 && a.graceful > milliseconds(limit_s * 1000 / 2)) {
    a.graceful = milliseconds(limit_s * 1000 / 2);
    a.why += ", at most half the time limit";
  }
  a.why = format_duration(a.graceful) + " (" + a.why + ")";
  return a;
}

}  // namespace trainctl
