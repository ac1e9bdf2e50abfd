// --metrics-dir's goodput: the report of this task (history/run_report.hpp) as the run
// goes, built by the report's own code from what `trainctl report` reads: SLURM's Start
// and node count of this run, and the run events rank 0's controller appends to the
// user's state directory. Written by the supervisor that publishes the job's first
// node's node state (one copy a job), so a dashboard's goodput of a running job is the
// figure `trainctl report JOB` gives at the same moment.
//
// The events file sits in the user's home, often on a network filesystem: it is looked
// at (one fstatat) once per metrics interval, as the switches are, and read again only
// when it changed (a save, a notice), in the supervisor's loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "job_history.hpp"
#include "metrics_text.hpp"
#include "run_events.hpp"

namespace trainctl {

class live_report {
 public:
  // `task`: this run as sacct would record it (job id, name, user, nodes; state RUNNING);
  // its start_ms may be 0 until started() says it.
  live_report(task_record task, std::string events_path);

  // SLURM's Start of this run (SLURM_JOB_START_TIME, or the controller's answer).
  void started(std::int64_t start_ms);

  // The task's figures at `now_ms` (report_metrics.hpp's running_task_metrics), labelled
  // `labels`; none before its Start is known or while no event of it was read.
  std::vector<metric_family> metrics(std::int64_t now_ms,
                                     const std::vector<std::pair<std::string, std::string>>& labels);

  // What the last read of the events file said was wrong ("" when nothing), once.
  std::string take_problem();

 private:
  void refresh();

  task_record task_;
  std::string path_;
  std::vector<run_event> events_;
  // The file as last read: a change of any of these is read again.
  ino_t ino_ = 0;
  off_t size_ = -1;
  std::int64_t mtime_ns_ = -1;
  std::string problem_, said_;
};

}  // namespace trainctl
