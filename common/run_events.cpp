#include "run_events.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "env.hpp"
#include "env_names.hpp"
#include "node_names.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "private_files.hpp"
#include "run_event_kinds.hpp"
#include "user_paths.hpp"

namespace trainctl {
namespace {

// Words in an event line: letters, digits, '-' and '_' (a switch's name, a reason).
bool is_word(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// The newest 8 MiB are read: some 2,300 runs of 8 nodes with 20 saves each (3.5 KB of
// events a run), or a thousand runs with a save a minute for a day each. Older runs fall
// off the front; the breaker and the report's recent runs never do.
constexpr std::size_t kMaxRead = 8 << 20;

// "<rank>:<us>,..." (at most kMaxWorks pairs).
constexpr std::size_t kMaxWorks = 256;
bool parse_works(const std::string& value, std::vector<std::pair<std::int64_t, std::int64_t>>* out) {
  std::istringstream in(value);
  std::string pair;
  while (std::getline(in, pair, ',')) {
    const std::size_t colon = pair.find(':');
    if (colon == std::string::npos || out->size() >= kMaxWorks) return false;
    const std::string rank = pair.substr(0, colon), us = pair.substr(colon + 1);
    if (!all_digits(rank, 9) || !all_digits(us, 18)) return false;
    out->emplace_back(std::strtoll(rank.c_str(), nullptr, 10), std::strtoll(us.c_str(), nullptr, 10));
  }
  return !out->empty();
}

// run_event::text on disk and back: printable ASCII, no space (the fields' separator).
constexpr std::size_t kMaxText = 1000;
std::string encode_text(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, kMaxText))
    out += c == ' ' ? "%20" : c == '%' ? "%25" : c < ' ' || c > '~' ? "?" : std::string(1, c);
  return out;
}
std::string decode_text(const std::string& value) {
  std::string out;
  for (std::size_t i = 0; i < value.size() && out.size() < kMaxText; ++i) {
    char c = value[i];
    if (c == '%' && i + 2 < value.size() && std::isxdigit(static_cast<unsigned char>(value[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(value[i + 2]))) {
      c = static_cast<char>(std::stoi(value.substr(i + 1, 2), nullptr, 16));
      i += 2;
    }
    out += c < ' ' || c > '~' ? '?' : c;
  }
  return out;
}

bool parse_line(const std::string& line, run_event* e) {
  std::istringstream in(line);
  std::string ms, job, what, field;
  if (!(in >> ms >> job >> what) || !all_digits(ms, 15) || job.compare(0, 4, "job=") != 0 ||
      !all_digits(job.substr(4), 20) || !is_word(what))
    return false;
  e->ms = std::strtoll(ms.c_str(), nullptr, 10);
  e->job = job.substr(4);
  e->what = what;
  while (in >> field) {
    const size_t eq = field.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key == "step" || key == "ms" || key == "task" || key == "restart") {
      if (!all_digits(value, 15)) return false;
      (key == "step"   ? e->step
       : key == "ms"   ? e->took_ms
       : key == "task" ? e->task
                       : e->restart) = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key == "reason") {
      if (!is_word(value)) return false;
      e->reason = value;
    } else if (key == "node") {
      if (!valid_node_name(value)) return false;
      e->node = value;
    } else if (key == "works") {
      if (!parse_works(value, &e->works)) return false;
    } else if (key == "text") {
      e->text = decode_text(value);
    } else if (is_word(key) && all_digits(value, 15) && e->figures.size() < 16) {
      e->figures.emplace_back(key, std::strtoll(value.c_str(), nullptr, 10));
    }  // other keys: from a newer trainctl, ignored
  }
  return true;
}

}  // namespace

std::string run_events_dir() { return user_state_path(env_var::kTrainctlRunEventsDir, "runs"); }

std::string run_events_path(const std::string& key) {
  const std::string dir = run_events_dir();
  if (dir.empty() || !all_digits(key, 20)) return "";
  return dir + "/" + key;
}

std::string own_run_events_path() {
  return run_events_path(env_or(env_var::kSlurmArrayJobId, env_text(env_var::kSlurmJobId)));
}

std::int64_t text_figure(const std::string& text) {
  if (text.empty()) return -1;
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return static_cast<std::int64_t>(h % 1000000000000000ULL);
}

std::int64_t program_id(const std::string& cmdline) { return text_figure(cmdline); }

std::int64_t this_program_id() {
  const owned_fd fd(open("/proc/self/cmdline", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return -1;
  std::string text;
  char buf[4096];
  ssize_t n;
  while (text.size() < (1u << 20) && (n = read(fd.get(), buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(n));
  return program_id(text);
}

std::string format_run_event(const run_event& e) {
  std::string line = std::to_string(e.ms) + " job=" + (all_digits(e.job, 20) ? e.job : "0") + " " +
                     (is_word(e.what) ? e.what : "unknown");
  if (e.step >= 0) line += " step=" + std::to_string(e.step);
  if (e.took_ms >= 0) line += " ms=" + std::to_string(e.took_ms);
  if (!e.reason.empty()) line += " reason=" + (is_word(e.reason) ? e.reason : std::string("other"));
  if (e.task >= 0) line += " task=" + std::to_string(e.task);
  if (e.restart >= 0) line += " restart=" + std::to_string(e.restart);
  if (valid_node_name(e.node)) line += " node=" + e.node;
  for (const auto& [key, value] : e.figures)
    if (is_word(key) && value >= 0) line += " " + key + "=" + std::to_string(value);
  std::string works;
  for (const auto& [rank, us] : e.works)
    if (rank >= 0 && us >= 0) works += (works.empty() ? "" : ",") + std::to_string(rank) + ":" + std::to_string(us);
  if (!works.empty()) line += " works=" + works;
  if (!e.text.empty()) line += " text=" + encode_text(e.text);
  return line + "\n";
}

std::int64_t run_event::figure(const std::string& key, std::int64_t otherwise) const {
  for (const auto& [k, v] : figures)
    if (k == key) return v;
  return otherwise;
}

std::string append_run_events(const std::string& path, const std::string& lines) {
  if (path.empty()) return "no file for run events (set TRAINCTL_RUN_EVENTS_DIR or HOME)";
  return append_private(path, lines, kMaxRead);  // the read takes it whole
}

std::vector<run_event> parse_run_events(const std::string& text) {
  std::vector<run_event> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    run_event e;
    if (parse_line(line, &e)) out.push_back(std::move(e));
  }
  return out;
}

std::vector<run_event> this_array(std::vector<run_event> events) {
  std::int64_t since = 0;
  for (const run_event& e : events)
    if (e.what == run_event_kind::kTaskStart) since = std::max(since, e.figure("since", 0));
  if (since == 0) return events;
  constexpr std::int64_t kClockMs = 60000;
  events.erase(
      std::remove_if(events.begin(), events.end(), [&](const run_event& e) { return e.ms < since - kClockMs; }),
      events.end());
  return events;
}

std::vector<run_event> read_run_events(const std::string& path, std::string* why) {
  std::string text = read_private(path, kMaxRead, why, true);
  // A file past the limit: the first line read is cut, and a cut time could still parse.
  if (text.size() >= kMaxRead) text.erase(0, text.find('\n') == std::string::npos ? text.size() : text.find('\n') + 1);
  return this_array(parse_run_events(text));
}

}  // namespace trainctl
