#include "run_progress.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "parse.hpp"
#include "run_event_kinds.hpp"

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
    if (e.what == run_event_kind::kFirstStep && r.first_step < 0 && e.step >= 0) r.first_step = e.step;
    if (e.what == run_event_kind::kNotice && e.reason == "preempted") r.preempted = true;
    if (e.what == run_event_kind::kNotice && e.reason == "deadline") r.deadline = true;
    if (e.what == run_event_kind::kDeath && !e.reason.empty() && (r.death_ms == 0 || e.ms < r.death_ms)) {
      r.death_ms = e.ms;
      r.death_step = e.step;
      r.death_how = e.reason;
      r.death_oom = static_cast<int>(e.figure("oom", -1));
    }
    if (e.what == run_event_kind::kTaskEnd) {
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
    if (r->end != "failed" || r->preempted || r->deadline || r->first_step < 0 || next->first_step < 0) break;
    if (r->killed_from_outside()) break;                   // no failure of the program
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

progress_count runs_failing_before_check(const std::vector<array_run>& runs, const array_run& current) {
  progress_count c;
  if (current.first_step >= 0 || current.killed_from_outside()) return c;
  c.runs = 1;
  c.jobs = current.job;
  const array_run* next = &current;
  for (auto r = runs.rbegin(); r != runs.rend(); ++r) {
    if (r->job == current.job && (r->end_ms == 0 || r->start_ms >= current.start_ms)) continue;  // this run
    if (r->end_ms == 0 || r->end != "failed" || r->preempted || r->deadline || r->first_step >= 0) break;
    if (r->killed_from_outside()) break;
    if (next->start_ms < r->end_ms || !comes_after(*r, *next)) break;
    ++c.runs;
    c.jobs = r->job + " " + c.jobs;
    next = &*r;
  }
  return c;
}

namespace {

// The runs named in `jobs`, each job's newest run before the ones counted after it.
std::vector<const array_run*> counted_runs(const std::vector<array_run>& runs, const std::string& jobs) {
  std::vector<std::string> ids;
  for (const std::string_view id : split(jobs, ' '))
    if (!id.empty()) ids.emplace_back(id);
  // Newest first: a requeued job's id appears once per run, newest last in `jobs`.
  std::vector<const array_run*> out;
  std::size_t want = ids.size();
  for (auto r = runs.rbegin(); r != runs.rend() && want > 0; ++r)
    if (r->job == ids[want - 1]) {
      out.push_back(&*r);
      --want;
    }
  return out;
}

}  // namespace

std::string how_runs_ended(const std::vector<array_run>& runs, const std::string& jobs) {
  const std::vector<const array_run*> counted = counted_runs(runs, jobs);
  std::size_t oom = 0, unknown = 0;
  for (const array_run* r : counted) {
    oom += r->death_how == "SIGKILL" && r->death_oom == 1;
    unknown += r->death_how == "SIGKILL" && r->death_oom < 0;
  }
  const std::size_t killed = oom + unknown;
  if (killed == 0) return "failed";
  const std::string how = unknown == 0 ? "killed by the OOM killer (out of memory)"
                          : oom == 0   ? "killed by SIGKILL (the OOM killer or a memory limit, as far as is known)"
                                       : "killed by SIGKILL (" + std::to_string(oom) + " of them by the OOM killer)";
  if (killed == counted.size()) return "were " + how;
  return "failed (" + std::to_string(killed) + " of them " + how + ")";
}

bool died_at_one_step(const std::vector<array_run>& runs, const std::string& jobs, std::string* why) {
  const std::vector<const array_run*> counted = counted_runs(runs, jobs);
  std::string steps;
  bool known = !counted.empty(), same = true;
  for (auto r = counted.rbegin(); r != counted.rend(); ++r) {  // oldest first
    known = known && (*r)->death_ms != 0;
    same = same && (*r)->death_step == counted.front()->death_step;
    steps += (steps.empty() ? "" : ", ") + ((*r)->death_ms == 0    ? std::string("unknown")
                                            : (*r)->death_step < 0 ? std::string("before any step")
                                                                   : std::to_string((*r)->death_step));
  }
  if (known && same) return true;
  if (why != nullptr)
    *why = known ? "the runs died at different steps (" + steps + "), as on a node failing at random times"
                 : "how the runs died is not known for each (" + steps + ")";
  return false;
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
