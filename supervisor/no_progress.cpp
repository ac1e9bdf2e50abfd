#include "no_progress.hpp"

#include <chrono>

#include "run_event_kinds.hpp"
#include "subprocess.hpp"

namespace trainctl {

std::vector<run_event> read_own_run_events_bounded(const std::vector<int>& ignore_signals, std::string* why) {
  const std::string path = own_run_events_path();
  if (path.empty()) {
    *why = "no file for run events (set TRAINCTL_RUN_EVENTS_DIR or HOME)";
    return {};
  }
  child_spec spec;
  spec.deadline = std::chrono::milliseconds(5000);
  spec.ignore_signals = ignore_signals;
  // The child prints the events it read, or "!" and why not.
  spec.work = [path] {
    std::string problem, out;
    const std::vector<run_event> events = read_run_events(path, &problem);
    if (!problem.empty()) return "!" + problem;
    for (const auto& e : events) out += format_run_event(e);
    return out;
  };
  const child_result r = run_child(spec);
  if (!r.ok()) {
    *why = r.error;
    return {};
  }
  if (!r.output.empty() && r.output[0] == '!') {
    *why = r.output.substr(1);
    return {};
  }
  return parse_run_events(r.output);
}

bool breaker_ended_run(const std::vector<run_event>& events, const std::string& job, std::int64_t since_ms) {
  for (const auto& e : events)
    if (e.job == job && e.ms >= since_ms && e.what == run_event_kind::kExit && e.reason == "no-progress") return true;
  return false;
}

}  // namespace trainctl
