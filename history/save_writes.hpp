// What `trainctl report` reads of a save's write and of where a run resumed: an
// asynchronous save's commit (rank 0's `commit`, the supervisors' `committed`), a write
// the run's end cut (`write_cut`) or that failed (`write_failed`), and a task that
// started from step 0 although saves existed (rank 0's first_step: what its
// resume_path() look could not trust; and the saves earlier tasks committed).
#pragma once

#include <string>
#include <vector>

#include "report_model.hpp"

namespace trainctl {

// Takes `e` into the task's saves when it is one of the events above; false otherwise.
// `at` clamps a time into the task. Call in time order, after the save's own event.
bool note_write_event(task_report& t, const run_event& e, std::int64_t at_ms);

// After a task's events: a save whose write was cut or failed never finished; an exit's
// save the rank waited for at its end lasts until its commit.
void settle_writes(task_report& t);

// A save's length for the report and the checkpoint advice: to its commit when that is
// known (the write included), else to its end.
double save_seconds(const save_span& s);

// The text of one save in a task's detail line: "save at step S (reason, 2.1s blocking,
// 1m34s to commit)", "(reason, 2.1s blocking, cut after 1m34s: the job's end)", ...
std::string save_clause(const save_span& s, bool running);

// Marks each task that started from step 0 although saves existed (what its resume look
// could not trust, or a save an earlier task of the report kept), with why.
void note_fresh_starts(run_report& r);

}  // namespace trainctl
