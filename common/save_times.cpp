#include "save_times.hpp"

#include <cctype>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "env_names.hpp"
#include "node_names.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "private_files.hpp"
#include "user_paths.hpp"

namespace trainctl {
namespace {

// Far more lines than a year of saves makes. A line is written only for a save longer
// than the longest its writer had read, so the longest is among the newest lines: the
// file is read from its end (read from the start, the newest records of a file past
// this size were never seen and auto chose from old ones).
constexpr std::size_t kMaxRead = 1 << 20;
// Past this size a record's writer compacts the file to the longest line of each kind
// (the save, each phase): all that is ever read from it.
constexpr off_t kCompactAt = 64 << 10;

// The kind of a record line ("save", a phase's name) and its duration; "" when none.
std::pair<std::string, std::int64_t> record_of(const std::string& line) {
  constexpr std::int64_t kWeekMs = std::int64_t{7} * 24 * 3600 * 1000;  // longer is no duration of ours
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
  if (name.empty() || name.size() > 32 || ms <= 0 || ms >= kWeekMs) return {"", 0};
  return {name, ms};
}

// The newest whole lines of `path` (up to kMaxRead), refused like read_private.
std::string newest_lines(const std::string& path, std::string* why) {
  std::string text = read_private(path, kMaxRead, why, true);
  // A full window may start inside a line: it starts at the next whole one (a file of
  // exactly this size loses its oldest line, never its longest).
  const std::size_t first_end = text.find('\n');
  if (text.size() == kMaxRead && first_end != std::string::npos) text.erase(0, first_end + 1);
  return text;
}

// Each kind's longest line in `text`, whole.
std::map<std::string, std::pair<std::int64_t, std::string>> longest_lines(const std::string& text) {
  std::map<std::string, std::pair<std::int64_t, std::string>> out;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const auto [name, ms] = record_of(line);
    if (!name.empty() && ms > out[name].first) out[name] = {ms, line};
  }
  return out;
}

// A file past kCompactAt is replaced (rename, same directory) by one with each kind's
// longest line. One compactor at a time (a lock on the old file); a record appended to
// the old file while it is rewritten is carried over; one appended in the instant
// between that last read and the appender's write would be lost, and the next longer
// save records it again.
void compact_if_large(const std::string& path) {
  const owned_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() || st.st_size <= kCompactAt ||
      flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return;
  std::string why;
  std::string kept;
  for (const auto& [name, record] : longest_lines(newest_lines(path, &why))) kept += record.second + "\n";
  std::string tmp = path + ".compact.XXXXXX";
  const owned_fd out(mkostemp(tmp.data(), O_CLOEXEC));  // 0600
  if (!out || !why.empty()) {
    if (out) unlink(tmp.c_str());
    return;
  }
  bool ok = write(out.get(), kept.data(), kept.size()) == static_cast<ssize_t>(kept.size());
  ok = ok && rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) unlink(tmp.c_str());
  // What was appended to the old file since it was read goes on in the new one.
  struct stat later {};
  if (ok && fstat(fd.get(), &later) == 0 && later.st_size > st.st_size) {
    std::string tail(static_cast<std::size_t>(std::min<off_t>(later.st_size - st.st_size, kMaxRead)), '\0');
    const ssize_t got = pread(fd.get(), tail.data(), tail.size(), st.st_size);
    if (got > 0) (void)!write(out.get(), tail.data(), static_cast<std::size_t>(got));
  }
}

}  // namespace

std::string save_times_dir() { return user_state_path(env_var::kTrainctlSaveTimesDir, "save_times"); }

std::string save_times_path(const std::string& key) {
  const std::string dir = save_times_dir();
  if (dir.empty() || !all_digits(key, 20)) return "";
  return dir + "/" + key;
}

std::string save_times_path_for_name(const std::string& job_name) {
  const std::string dir = save_times_dir();
  if (dir.empty() || job_name.empty() || job_name.size() > 100 || job_name[0] == '.') return "";
  for (const char c : job_name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return "";
  return dir + "/name." + job_name;
}

std::int64_t longest_recorded_save_ms(const std::string& path, std::string* why) {
  const auto longest = longest_lines(newest_lines(path, why));
  const auto save = longest.find("save");
  return save == longest.end() ? 0 : save->second.first;
}

std::string record_save_time(const std::string& path, const std::string& job, const std::string& node,
                             std::int64_t save_ms) {
  if (path.empty()) return "no file for save times (set TRAINCTL_SAVE_TIMES_DIR or HOME)";
  std::string why = append_private(path, std::to_string(std::time(nullptr)) + " job=" + (job.empty() ? "-" : job) +
                                             " node=" + (valid_node_name(node) ? node : "-") +
                                             " save_ms=" + std::to_string(save_ms) + "\n");
  if (why.empty()) compact_if_large(path);
  return why;
}

std::map<std::string, std::int64_t> longest_recorded_phases(const std::string& path, std::string* why) {
  std::map<std::string, std::int64_t> longest;
  for (const auto& [name, record] : longest_lines(newest_lines(path, why))) longest[name] = record.first;
  return longest;
}

std::string record_phase_time(const std::string& path, const std::string& job, const std::string& node,
                              const std::string& phase, std::int64_t ms) {
  if (path.empty()) return "no file for phase times (set TRAINCTL_SAVE_TIMES_DIR or HOME)";
  if (phase == "save") return record_save_time(path, job, node, ms);
  std::string why = append_private(path, std::to_string(std::time(nullptr)) + " job=" + (job.empty() ? "-" : job) +
                                             " node=" + (valid_node_name(node) ? node : "-") + " phase=" + phase +
                                             " ms=" + std::to_string(ms) + "\n");
  if (why.empty()) compact_if_large(path);
  return why;
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

std::int64_t lead_needed_ms(std::int64_t longest_save_ms, std::int64_t longest_quiet_ms) {
  return static_cast<std::int64_t>(kAutoSaveFactor * static_cast<double>(std::max<std::int64_t>(longest_save_ms, 0))) +
         std::max<std::int64_t>(longest_quiet_ms, 0) + kLeadMargin.count();
}

}  // namespace trainctl
