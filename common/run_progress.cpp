#include "run_progress.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <map>

namespace trainctl {

std::vector<array_run> array_runs(const std::vector<run_event>& events) {
  std::vector<array_run> runs;
  std::map<std::string, std::size_t> open;  // job id -> its run that has no task_end yet
  for (const auto& e : events) {
    auto it = open.find(e.job);
    if (it == open.end()) {
      array_run r;
      r.job = e.job;
      r.start_ms = e.ms;
      runs.push_back(r);
      it = open.emplace(e.job, runs.size() - 1).first;
    }
    array_run& r = runs[it->second];
    if (e.what == "first_step" && r.first_step < 0 && e.step >= 0) r.first_step = e.step;
    if (e.what == "notice" && e.reason == "preempted") r.preempted = true;
    if (e.what == "task_end") {
      r.end_ms = e.ms;
      r.end = e.reason;
      if (e.reason == "preempted") r.preempted = true;
      open.erase(it);
    }
  }
  return runs;
}

progress_count runs_without_progress(const std::vector<array_run>& runs, const std::string& current_job,
                                     std::int64_t current_first) {
  progress_count c;
  std::int64_t next_first = current_first, next_start = -1;  // -1: the run going now, after them all
  for (auto r = runs.rbegin(); r != runs.rend(); ++r) {
    if (r->end_ms == 0 && r->job == current_job && next_start < 0) continue;  // the run going now
    if (r->end_ms == 0) break;  // its supervisor never said how it ended: unknown
    const bool failed = r->end == "failed" || r->end == "no-progress";
    if (!failed || r->preempted || r->first_step < 0 || next_first < 0) break;
    if (next_start >= 0 && next_start < r->end_ms) break;  // side by side
    if (next_first > r->first_step) break;                 // it saved something the next one used
    ++c.runs;
    c.jobs = r->job + (c.jobs.empty() ? "" : " " + c.jobs);
    c.step = c.step < 0 ? r->first_step : std::min(c.step, r->first_step);
    next_first = r->first_step;
    next_start = r->start_ms;
  }
  return c;
}

std::string task_end_reason(int wait_status) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return "ok";
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == kNoProgressExit) return "no-progress";
  return "failed";
}

}  // namespace trainctl
