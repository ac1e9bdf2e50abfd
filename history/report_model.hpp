// The report's model: where the node-hours of a job array (or one job) went, task by
// task, as run_report.hpp builds it and every face of `trainctl report` shows it (text,
// JSON, SVG, metrics).
//
// The model of one task, on the wall clock between SLURM's Start and End:
//   start-up   Start .. rank 0's first step, but for the restore
//   restore    the loop loading its checkpoint, where it marks it (ctl.phase("restore"))
//              before its first step
//   training   between saves; kept when a save that finished follows it (or the loop
//              finished on its own and the task COMPLETED: its last save is assumed);
//              a save some rank did not commit (its supervisor's `uncommitted` event)
//              never finished
//   saves      each save's decision .. its end (the rank's next check, or its end)
//   lost       training after the last finished save, and a save that never finished
//   hung       the part of that from a hang's stall on (the supervisor's hang notice
//              says how long the ranks had stalled); with --hang-action=save-exit, the
//              stall up to the save it ended in (the save keeps the steps before it)
//   end        rank 0's end .. End (the launcher and SLURM closing the task)
// Inside training, apart: what waiting for a straggler cost, and the slow steps'
// time beyond the median (step_costs.hpp).
// Node-seconds are seconds times the task's nodes. Goodput = kept training / allocated.
// Queue: the array's time with no task running (submitted or eligible, and waiting),
// shown apart: no node was held then.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job_history.hpp"
#include "step_costs.hpp"

namespace trainctl {

struct save_span {
  std::int64_t begin_ms = 0, end_ms = 0;  // end 0: never finished
  std::int64_t step = -1;
  std::string reason;
  bool exit = false;  // the save at the exit decision
  // Ranks whose supervisor said they did not commit it (ctl.saved): the save counts as
  // never finished, whatever rank 0 did, since resume_path will not resume from it.
  std::vector<std::int64_t> uncommitted;
  // An asynchronous save (save_writes.hpp): how long the loop waited (its hand-off; 0:
  // not handed off), when it was committed (0: not said), and a write that was cut
  // ("job-end", "timeout", "run-end") after written_ms of writing, or failed (its error).
  std::int64_t blocking_ms = 0, commit_ms = 0, written_ms = 0;
  std::string cut, failed;
};

// A task's hang, from the supervisors' hang notices.
struct hang_view {
  std::int64_t from_ms = 0;  // when the ranks stalled, from the first hang notice (0: none)
  std::string summary;       // the first node's summary: where the ranks were, the collective
};

struct task_report {
  task_record task;
  bool running = false;  // End not yet: measured up to now
  bool has_events = false;
  std::int64_t first_step_ms = 0, first_step = -1, last_step = -1, end_event_ms = 0;
  std::int64_t last_agreement_ms = 0;  // rank 0's last check(), as its end says (0: not said)
  hang_view hang;
  std::vector<save_span> saves;
  std::vector<std::pair<std::int64_t, std::string>> notices;  // unix ms, kind
  std::string exit_reason;
  // What rank 0's resume_path() look could not trust as the run began (its first_step),
  // and, for a task that started from step 0 although saves existed, why (save_writes.hpp).
  std::int64_t untrusted_saves = 0;
  std::string fresh_start;
  std::int64_t held_tasks = 0;  // the array's pending tasks the kill switch held as this task ended
  // The loop finished on its own (no exit trainctl decided, rank 0 ended, COMPLETED): its
  // last work is kept, its own last save assumed.
  bool loop_finished = false;
  // kept: the step of the last finished save; snapshot: the newest of the snapshots the
  // nodes' supervisors wrote out after a rank died (snapshot_writeout.hpp), -1: none.
  std::int64_t exit_step = -1, kept_step = -1, snapshot_step = -1;
  // Seconds of wall time (times task.nodes for node-seconds).
  double queue_s = 0, startup_s = 0, restore_s = 0, kept_s = 0, saves_s = 0, lost_s = 0, hung_s = 0, end_s = 0;
  // A running task's training since its last finished save (and a save still going on):
  // not kept yet, and not lost either, until the task ends.
  double unsaved_s = 0;
  // Training intervals (unix ms) and whether each was kept, for the picture.
  struct span {
    std::int64_t from, to;
    bool kept;
    bool hung = false;     // not kept: after a hang's stall began
    bool unsaved = false;  // not kept: a running task's, since its last finished save
  };
  std::vector<span> training;
  // The first rank to die of its own (the nodes' supervisors' `death` events): when, which
  // rank on which node, how, the error its loop noted, and how long before the next
  // node's death it came (-1: no other node's was recorded). ms 0: no death recorded.
  // When the earliest death was of a closed connection (a peer's end) and another node's
  // rank died of its own cause soon after, that rank is named and `lost_peer` is the
  // earlier one (rank -1: none).
  struct death {
    std::int64_t ms = 0;
    std::int64_t rank = -1;
    std::string node, how, error;
    double lead_s = -1;
    // How far the two nodes' clocks may differ, from what their supervisors said of them
    // (crash_order.hpp's allowance): seconds, -1 when their order cannot be told, and how
    // it was found ("" when they said nothing: the report's own 50 ms).
    double skew_s = 0.05;
    std::string skew_how;
    struct {
      std::int64_t rank = -1;
      std::string node;
      double before_s = 0;
    } lost_peer;
  } first_death;
  straggler_price straggler;  // what waiting for the slowest rank cost (step_costs.hpp)
  slow_steps slow;            // rank 0's steps over the median + 3 MAD
  // Figures no real run can have (more time than the task had), from a damaged events
  // file: not counted, each named here as "step_times (...)" for the report to say.
  std::vector<std::string> damaged;
};

struct run_report {
  std::string job;                 // as asked
  std::vector<task_report> tasks;  // by start; tasks not started last
  // Node-seconds over the tasks that started.
  double allocated = 0, productive = 0, startup = 0, restore = 0, saves = 0, lost = 0, hung = 0, end = 0;
  double unsaved = 0;  // running tasks' training since their last save (task_report::unsaved_s)
  double queue_s = 0;  // wall seconds with no task running
  // Node-seconds of the training (kept or lost) that went to waiting for a straggler,
  // and to slow steps beyond the median: not buckets of their own, parts of training.
  double straggler = 0, slow_steps = 0;
  int straggler_tasks = 0, slow_step_tasks = 0;  // tasks that measured them
  std::int64_t first_ms = 0, last_ms = 0;        // the first Start, the last End (or now)
  double goodput() const { return allocated > 0 ? productive / allocated : 0; }
};

// The causes of badput (allocated node-seconds not kept as training), each named once
// for every face that shows them: its key (`<key>_node_s` in --json, the `cause` label of
// the badput metric), its words in the text report, and its seconds in a task and in the
// run (node-seconds). Kept training, the unsaved time of running tasks and the queue are
// not badput causes: each face shows them apart.
struct badput_cause {
  const char* key;
  const char* words;
  double task_report::*task_s;
  double run_report::*node_s;
};
inline constexpr badput_cause kBadputCauses[] = {
    {"startup", "start-up", &task_report::startup_s, &run_report::startup},
    {"restore", "restore", &task_report::restore_s, &run_report::restore},
    {"saves", "saves", &task_report::saves_s, &run_report::saves},
    {"lost", "lost work", &task_report::lost_s, &run_report::lost},
    {"hung", "hangs", &task_report::hung_s, &run_report::hung},
    {"end", "task ends", &task_report::end_s, &run_report::end},
};

// "12.3s", "4m05s", "2h07m": a span a person reads at a glance.
std::string report_span(double seconds);

}  // namespace trainctl
