// Each interruption of a job array and what it cost (`trainctl report`), split as Meta's
// and ByteDance's reports on training at scale split theirs: from the fault until the
// training was back where it had been.
//
// An interruption is a run that ended before its loop did: a preemption, a time limit,
// a crash, a hang, the kill switch, a peer's failure, a notice signal, memory, the
// no-progress breaker, a cancel. Its cause comes from the exit the ranks agreed on, else
// from SLURM's state (FAILED is a crash). Its cost, in wall seconds of the run and of
// the run that resumed it (the next one to start after its end):
//   detect    from the fault to trainctl's decision, where the events date the fault:
//             a notice (preemption, deadline, signal, peer, memory) to the agreed exit;
//             a hang's stall to the hang notice; "-" for a crash or a switch (no fault time)
//   teardown  from the decision (the agreed exit, a hang notice, else rank 0's last
//             agreement) to SLURM's End: the exit's save, the ranks and launcher ending
//   queue     the resuming run's wait with no task running (report's QUEUE)
//   start-up  its start-up and restore (report's START-UP, restore apart)
//   replayed  the steps trained after the last committed save, which the resuming run
//             trains again, and their time (the run's lost work and hangs); after a
//             snapshot written out by the supervisors, the steps after the snapshot
// A run nobody resumed (the last, or a kill switch's) has no queue, start-up or restore.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "report_model.hpp"

namespace trainctl {

struct interruption {
  const task_report* run = nullptr;      // the run interrupted
  const task_report* resumed = nullptr;  // the next run, nullptr: none started after it
  std::string cause;                     // "preemption", "time limit", "crash", ...
  double detect_s = -1;                  // -1: the events do not date the fault
  double teardown_s = 0;
  double queue_s = 0, startup_s = 0, restore_s = 0;  // the resuming run's; 0 without one
  std::int64_t replayed_steps = -1;                  // -1: not known (no step seen)
  double replayed_s = 0;
  // The resuming run started from a snapshot the supervisors wrote out (its step, -1:
  // not), and the steps it would have trained again from the last committed save.
  std::int64_t snapshot_step = -1;
  std::int64_t replayed_without_snapshot = -1;
};

struct interruption_costs {
  std::vector<interruption> each;  // in the runs' order
  std::map<std::string, int> causes;
  // Sums of the rows (detect over the rows that have one).
  double detect_s = 0, teardown_s = 0, queue_s = 0, startup_s = 0, restore_s = 0, replayed_s = 0;
  std::int64_t replayed_steps = 0;  // over the rows that know theirs
  int steps_unknown = 0;            // rows whose steps are not known
};

// From the report's runs (which must outlive the result: it points into them).
interruption_costs find_interruptions(const run_report& r);

// The report's table ("" when no run was interrupted) and its JSON array's rows.
std::string interruptions_text(const interruption_costs& c);

}  // namespace trainctl
