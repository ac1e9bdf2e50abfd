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
      r.task = e.task;
      r.restart = e.restart;
      if (e.reason == "preempted") r.preempted = true;
      open.erase(it);
    }
  }
  return runs;
}

bool comes_after(const array_run& r, const array_run& next) {
  if (r.restart < 0 || next.restart < 0) return false;
  if (r.job == next.job) return next.task == r.task && next.restart > r.restart;
  return r.task >= 0 && next.task > r.task;
}

progress_count runs_without_progress(const std::vector<array_run>& runs, const array_run& current) {
  progress_count c;
  const array_run* next = &current;
  bool is_current = true;  // `next` is the run going now, whose start is after them all
  for (auto r = runs.rbegin(); r != runs.rend(); ++r) {
    if (r->end_ms == 0 && r->job == current.job && is_current) continue;  // the run going now
    if (r->end_ms == 0) break;  // its supervisor never said how it ended: unknown
    if (r->end != "failed" || r->preempted || r->first_step < 0 || next->first_step < 0) break;
    if (!is_current && next->start_ms < r->end_ms) break;  // side by side
    if (!comes_after(*r, *next)) break;                    // another array's run, or out of order
    if (next->first_step > r->first_step) break;           // it saved something the next one used
    ++c.runs;
    c.jobs = r->job + (c.jobs.empty() ? "" : " " + c.jobs);
    c.step = c.step < 0 ? r->first_step : std::min(c.step, r->first_step);
    next = &*r;
    is_current = false;
  }
  return c;
}

breaker_verdict judge_breaker(const std::vector<array_run>& runs, const array_run& current, int threshold) {
  breaker_verdict v;
  const array_run* newest = nullptr;
  for (auto r = runs.rbegin(); r != runs.rend() && newest == nullptr; ++r) {
    if (r->end_ms == 0 && r->job == current.job) continue;  // the run going now
    if (r->end_ms == 0) return v;                           // a run still going, or one nobody ended
    newest = &*r;
  }
  if (newest == nullptr) return v;
  if (newest->end == "no-progress") {
    // The same job again: a person released the held requeue. A later task of the
    // array: one the breaker's cancel missed.
    if (newest->job != current.job && comes_after(*newest, current)) {
      v.what = breaker_verdict::end_now;
      v.ended_job = newest->job;
    }
    return v;
  }
  if (threshold <= 0 || newest->first_step < 0) return v;
  // Were this run to resume where the newest did, the newest went nowhere too; resuming
  // earlier counts the same, later stops the count.
  array_run assumed = current;
  assumed.first_step = newest->first_step;
  const progress_count c = runs_without_progress(runs, assumed);
  if (c.runs < threshold) return v;
  v.what = breaker_verdict::armed;
  v.at_step = newest->first_step;
  v.count = c;
  return v;
}

std::string task_end_reason(int wait_status) {
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return "ok";
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == kNoProgressExit) return "no-progress";
  return "failed";
}

}  // namespace trainctl
