// Whether a job array (or a requeued job) is getting anywhere: its runs, rebuilt from
// its run events (run_events.hpp), and how many of the last ones went nowhere. The
// evidence the no-progress breaker acts on (supervisor/no_progress.hpp acts; nothing here does).
//
// A run is one task of the array, or one start of a requeued job. Its batch step's
// supervisor writes `task_end` when the batch script ends (reason ok, failed,
// preempted, or no-progress: the breaker ended it); rank 0's controller writes `first_step`, the step
// the loop resumed at, and the notices. A run made no progress when all of these hold:
//  - it ended failed (ok is progress enough: a sweep's task, a clean deadline exit);
//  - no preemption came in it, nor its deadline (a run that could not save before the
//    scheduler took its nodes or its time ran out is not the loop's failure);
//  - it and the run after it both reached their first check() (else: unknown);
//  - the run after it started after it ended (tasks side by side are independent);
//  - the run after it comes later in the same array: a higher array index, or the same
//    job requeued (a higher restart count). Job ids start again when a cluster's state
//    is reset, and then a file holds the runs of an older array of the same id;
//  - the run after it resumed at a step no later than it had: whoever saved, nothing
//    was saved that the next run could use.
// Anything else stops the count: the breaker fires only on evidence. A run the breaker
// ended stops it too: the next run of that job was released by a person (a requeue
// held by RequeueExitHold=93) and gets its own chance.
//
// Runs that never reached their first check() (an import error, a bad config, a newest
// checkpoint that fails to load: the commonest crash loop) have no step to compare, and
// count by the same rules otherwise: each failed, unpreempted, one after the other in the
// array. The run that makes them --no-progress-runs in a row ends with exit status 93
// as it fails, and the array's pending tasks are cancelled.
//
// How each run died comes from its nodes' supervisors (`death` events: the first rank
// death on a node that trainctl did not cause, its signal and that rank's last step). A
// SIGKILL carries its cause (oom_watch.hpp): the OOM killer's is the program's memory and
// counts (the lines say so instead of calling it a crash); one from outside the program
// (an admin, a health check, kill -9) is no failure of the program and stops the count,
// as a preemption does. A SIGKILL of unknown cause (a line of an older trainctl)
// counts, as it did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_events.hpp"

namespace trainctl {

struct array_run {
  std::string job;               // SLURM_JOB_ID of the run
  std::int64_t start_ms = 0;     // its first event
  std::int64_t end_ms = 0;       // its task_end; 0: not ended (or its supervisor died)
  std::int64_t first_step = -1;  // the step it resumed at; -1: no check() reached
  std::string end;               // task_end's reason: ok, failed, preempted, no-progress; "" none
  bool preempted = false;        // a preemption notice reached it
  bool deadline = false;         // its deadline notice reached it: the time limit ended it
  std::int64_t task = -1;        // SLURM_ARRAY_TASK_ID; -1: not an array (from task_end)
  std::int64_t restart = -1;     // SLURM_RESTART_COUNT; -1: unknown (no task_end, or an old one)
  // The run's first rank death (the earliest `death` event of its nodes): when (0: none
  // recorded), the step that rank was at (its last check(); -1: none), and how ("SIGSEGV",
  // "SIGKILL", ..., or "exit").
  std::int64_t death_ms = 0;
  std::int64_t death_step = -1;
  std::string death_how;
  int death_oom = -1;  // a SIGKILL: 1 the OOM killer's, 0 from outside the program, -1 not known
  // Killed from outside the program: its first death a SIGKILL that was not the OOM killer's.
  bool killed_from_outside() const { return death_how == "SIGKILL" && death_oom == 0; }
};

// Whether run `next` comes after run `r` in one array (or one requeued job): a higher
// array index, or the same job with a higher restart count. Unknown places: no.
bool comes_after(const array_run& r, const array_run& next);

// The runs in the order they began. Events of one job id after its task_end begin a new
// run (a requeued job keeps its id).
std::vector<array_run> array_runs(const std::vector<run_event>& events);

struct progress_count {
  int runs = 0;            // how many runs in a row, the newest ended one first, made no progress
  std::string jobs;        // their job ids, oldest first, space separated
  std::int64_t step = -1;  // the step they all resumed at (at most)
};

// Counts back from the newest ended run, judging each by the run after it; the newest
// by `current`, the run going now (its job, task, restart and first_step: the step it
// resumed at, -1 when not known yet, and then nothing can be counted). The current
// run's own events in `runs` are passed over.
progress_count runs_without_progress(const std::vector<array_run>& runs, const array_run& current);

// Counts back from `current`, the run ending now, which failed before its first check():
// it and the runs before it in a row that did the same (same rules as above, no step).
// 0 when `current` itself reached a check().
progress_count runs_failing_before_check(const std::vector<array_run>& runs, const array_run& current);

// How the counted runs `jobs` (space separated) ended, for the breaker's lines: "failed",
// or "were killed by the OOM killer (out of memory)" when each run's first death was
// its SIGKILL (some: said with how many; a SIGKILL of unknown cause is named so).
std::string how_runs_ended(const std::vector<array_run>& runs, const std::string& jobs);

// Whether the crash loop of runs `jobs` is the program's, so that their crash findings
// may be forgiven: every run's first death is known and came at one step (or before any
// step in each). Else false, and *why says what differed.
bool died_at_one_step(const std::vector<array_run>& runs, const std::string& jobs, std::string* why);

// What the breaker does for the run going now (job `current_job`), judged at its start
// from the runs before it (the threshold: --no-progress-runs, at least 1).
struct breaker_verdict {
  enum kind { none, end_now, armed };
  kind what = none;
  // end_now: the newest ended run was another job of the array that the breaker ended
  // (a pending task its cancel missed): this one ends at once too.
  std::string ended_job;
  // armed: `count.runs` (>= the threshold) runs in a row made no progress if this run
  // resumes at `at_step` or earlier, the step the newest of them resumed at: this run
  // then ends at its first check().
  std::int64_t at_step = -1;
  progress_count count;
};
// `current`: the run going now (its job, task and restart; its first step is not known).
breaker_verdict judge_breaker(const std::vector<array_run>& runs, const array_run& current, int threshold);

// The task_end reason for the batch script's wait status: ok (exit 0), no-progress
// (kNoProgressExit), else failed.
std::string task_end_reason(int wait_status);

// The exit status of a task the breaker ends: 93, as NVIDIA's resiliency extension uses
// for "no progress, do not restart", so one RequeueExitHold line covers both.
constexpr int kNoProgressExit = 93;

}  // namespace trainctl
