// What happened in each task of a job array, for `trainctl report`: one file per array
// (or single job) in the per-user state directory on the shared home, one line per
// event:
//   <unix ms> job=<SLURM_JOB_ID> <event> [step=<n>] [ms=<n>] [reason=<word>] [task=<n>] [restart=<n>] [node=<name>]
// Each kind of event and the fields it carries: run_event_kinds.hpp, one table. A job id
// the controller gives again after its state was reset names another array: the lines
// older than the newest array's submit (task_start's since, run_id.hpp's array_since)
// belong to the earlier one (this_array).
// Written by rank 0's controller, from its watcher thread, never the training loop (a
// hang, task_start and task_end by a supervisor); read back only as this user's regular file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainctl {

struct run_event {
  std::int64_t ms = 0;  // unix ms
  std::string job;      // SLURM_JOB_ID of the task that wrote it (digits)
  std::string what;     // its kind: run_event_kinds.hpp
  std::int64_t step = -1;
  std::int64_t took_ms = -1;  // saved: how long the save took
  std::string reason;         // save, exit: why; notice: what kind
  // task_end: the run's place, which a job id alone does not give (ids start again when
  // a cluster's state is reset): SLURM_ARRAY_TASK_ID (-1: not an array) and
  // SLURM_RESTART_COUNT (-1: unknown, as in lines of an older trainctl).
  std::int64_t task = -1;
  std::int64_t restart = -1;
  // task_end: the node the batch script ran on (the job's first; a one-node job's only
  // one): where the program ran, for the bad-node contrast (bad_node_contrast.hpp).
  std::string node;
  // Other figures, each `key=<digits>` (key a word): step_times (steps, median_us,
  // mad_us, outliers, excess_us) and compute (steps, slowest_us, marked).
  std::vector<std::pair<std::string, std::int64_t>> figures;
  // compute: each rank of the node and its work over the timed steps (us), as
  // `works=<rank>:<us>,...`.
  std::vector<std::pair<std::int64_t, std::int64_t>> works;
  // death: the error the rank died of, as its loop noted it (rank_beat::error, at most
  // 200 characters); notice of a hang: the node's summary of it. One line of printable
  // ASCII, at most 1,000 characters; on disk `text=` with ' ' and '%' as %20 and %25, last
  // on the line.
  std::string text;
  std::int64_t figure(const std::string& key, std::int64_t otherwise = -1) const;
};

// An event of kind `what` (run_event_kinds.hpp) by job `job` at `ms` (unix ms), its other
// fields unset: every writer starts from this.
inline run_event make_run_event(const char* what, const std::string& job, std::int64_t ms) {
  run_event e;
  e.ms = ms;
  e.job = job;
  e.what = what;
  return e;
}

// TRAINCTL_RUN_EVENTS_DIR, else $XDG_STATE_HOME/trainctl/runs, else
// $HOME/.local/state/trainctl/runs; "" when none can be named.
std::string run_events_dir();

// The file of the array (or job) `key`: digits only, else "".
std::string run_events_path(const std::string& key);

// This process's file: SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID ("" outside a SLURM job).
std::string own_run_events_path();

// The program a run ran, as a figure of its first_step event (`program=`): a hash of
// rank 0's command line (the interpreter, the training script and its arguments, as
// /proc/self/cmdline holds them; a launcher's rendezvous options are not there), at
// most 15 digits. The tasks of one training array share it; a sweep's tasks, each with
// its own arguments, do not (bad_node_contrast.hpp). -1 when it cannot be read.
std::int64_t program_id(const std::string& cmdline);
// A figure that stands for a text (a 64-bit FNV-1a hash, at most 15 digits): the same
// text gives the same figure on every node; -1 for "".
std::int64_t text_figure(const std::string& text);
std::int64_t this_program_id();

// One line for `e` (its time, job and fields; words only in `what` and `reason`).
std::string format_run_event(const run_event& e);

// An array's run events are kept this long after their last line (the supervisor's sweep).
inline constexpr long kRunEventsKeepS = 90L * 24 * 3600;

// Appends lines (each ending in '\n') in one write, creating the directory (0700).
// "" or why it could not. Opens with O_NOFOLLOW|O_NONBLOCK, appends only to this
// user's regular file; past 8 MiB its oldest lines go, down to 4 MiB (bounded_append.hpp).
std::string append_run_events(const std::string& path, const std::string& lines);

// The lines of the newest array among `events`: those from at most a minute (clocks
// differ) before the newest task_start's since; all of them where no line has one.
std::vector<run_event> this_array(std::vector<run_event> events);

// Every well-formed line of `path` (its newest 8 MiB, all of a file kept by its appends), in
// file order, of the newest array with that id (this_array); malformed lines are skipped. A file
// that is not this user's regular file is refused: *why says so in one line. Missing:
// empty, *why empty.
std::vector<run_event> read_run_events(const std::string& path, std::string* why);
std::vector<run_event> parse_run_events(const std::string& text);

}  // namespace trainctl
