// What a supervisor records about its run, for the array's next runs and for `trainctl
// report`: the no-progress breaker (judged at the start, confirmed at the batch step's
// end, then the array's pending tasks cancelled and the crash loop's nodes forgiven),
// how the run ended (task_end), the ranks' step times (compute), a hang, and the requeue
// of a preempted job on SLURM releases that do not requeue it themselves. Every write
// to the home directory runs in a child with a time limit: the home may stall.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "node_health.hpp"
#include "run_options.hpp"
#include "run_progress.hpp"
#include "task_log.hpp"

namespace trainctl {

struct node_state;

// The once-marker a supervisor claims when it learns the job is being preempted, so
// that the batch step's supervisor on this node (which SLURM may not signal) knows.
std::string preempted_marker(const std::string& job_id);

class run_end {
 public:
  run_end(const supervisor_options& opts, task_log& log) : opts_(opts), log_(log) {}

  // At the start: arms `ns` (may be null) when the array's last runs failed without
  // progress, or ends this run at once (killing `adopt`, the task) when the breaker
  // already ended one of another job. A wait status to end with, or -1 to go on.
  int start(pid_t adopt, node_state* ns);
  // At the batch step's end (the batch script's wait status; `interrupted`: a TERM or a
  // preemption came): whether the ranks ended this run on the breaker's vote, or this
  // run failed before its first check() as the runs before it did. Then the array's
  // pending tasks are cancelled and the crash loop's nodes forgiven where the runs died
  // at one step; returns the line for the --on-notice command (no-progress).
  std::optional<std::string> judge(int child_status, bool interrupted);
  // The breaker ended this run: the job exits kNoProgressExit.
  bool no_progress() const { return no_progress_; }

  // The kill switch `path` ended this run (or is there at its start): the array's pending
  // tasks are held, not cancelled, so that none waits in the queue for nodes only to end
  // at once, and `rm` + `scontrol release` goes on where the run stopped. One line says so.
  void hold_rest_of_array(const std::string& path) const;
  // The batch script ended while the job was being preempted: requeue it where SLURM
  // would not. `maybe_preempted`: a TERM or a preemption was seen on this node.
  void requeue_if_preempted(bool maybe_preempted);
  // How this run ended, for the no-progress count (batch step, once per run).
  void note_task_end(int child_status, bool preempted);
  // Each rank's work per step and the slowest rank's, from the ranks' heartbeat slots
  // (the node state's publisher, as it ends).
  void note_compute(const node_state& ns);
  // Whether this node's ranks committed the last save they were asked for (ctl.saved):
  // a line in the task's log and run events (save_commits.hpp). The publisher, as it ends.
  void note_commits(const node_state& ns);
  // This node's first rank death, the program's own (its wait status, at that rank's
  // step, -1 none; a SIGKILL's cause where known): how the run died, for the breaker
  // (run_progress.hpp: a kill from outside counts for nothing) and its forgiveness; the
  // rank, when, and the error it died of, for `trainctl report`'s first death.
  void note_death(const node_health::program_death& d);
  // The node's snapshots written out after a rank died (snapshot_writeout.hpp): a run
  // event for `trainctl report`.
  void note_snapshots(std::int64_t newest, std::int64_t oldest, int ranks) const;
  // A hang on the report's timeline, with how long the ranks had stalled and, from the
  // job's first node, the dump's summary of the whole job (where the ranks were, and the
  // flight recorder's verdict).
  void note_hang(std::int64_t stall_ms, const std::string& summary);

 private:
  void convict_where_this_program_crashed(const std::string& here) const;
  void append_event_bounded(const std::string& line, const char* what) const;
  void cancel_rest_of_array() const;
  void forgive_crash_loop_nodes(const std::vector<array_run>& runs, const std::string& jobs) const;
  array_run this_run() const;
  bool ending_run(const std::vector<array_run>& runs, array_run* r) const;

  const supervisor_options& opts_;
  task_log& log_;
  breaker_verdict breaker_;      // the breaker's verdict at the start
  bool no_progress_ = false;     // the breaker ended this run
  std::int64_t started_ms_ = 0;  // unix ms: this run's events are the ones since
};

}  // namespace trainctl
