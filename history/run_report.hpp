// Where the node-hours of a job array (or one job) went (`trainctl report JOB`): the two
// sources, SLURM's record of each task (sacct where accounting runs, else scontrol while
// slurmctld still holds the tasks) and the run events rank 0's controller appended
// (run_events.hpp), put together into the report whose model is report_model.hpp.
// `trainctl report` gathers them and shows it (cli/report/); a supervisor with
// --metrics-dir publishes its own task's as the run goes (supervisor/task_metrics.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "job_history.hpp"
#include "report_model.hpp"
#include "run_events.hpp"

namespace trainctl {

// How far before SLURM's Start a run's events may lie (the nodes' clocks differ): the
// most a run's window reaches back (less where the same job's earlier run ended closer).
inline constexpr std::int64_t kEventsBeforeStartMs = 5000;

// Puts them together; `now_ms` stands for the End of tasks still running.
run_report build_run_report(const std::string& job, std::vector<task_record> tasks,
                            const std::vector<run_event>& events, std::int64_t now_ms);

}  // namespace trainctl
