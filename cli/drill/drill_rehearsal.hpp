// trainctl drill's rehearsal, event by event: task 1's start-up, save switch, hang and
// notice, then task 2's resume and a rank killed. Each event adds its row (what should
// happen, what did, how long it took) and what it measured to the verdict's figures.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "drill_job.hpp"
#include "drill_report.hpp"
#include "run_options.hpp"

namespace trainctl::commands {

struct drill_setup {
  std::string script, name, drill_name, dir;
  std::chrono::milliseconds start_timeout{300000};  // from task 1 running to rank 0's first check()
  std::vector<std::string> sbatch;                  // the drill's own options, after the user's
  supervisor_options opts;                          // as the drill's tasks run (its switches' paths)
  std::int64_t lead_ms = 0, hang_ms = 0, user_hang_ms = 0;
  bool lead_auto = false, hang_alert = true;
  std::string hang_note;  // how the drill's hang timeout differs from the script's
};

// Task 1: sets *job1 to its job id once rank 0 reached check().
void rehearse_task_one(const drill_setup& s, const drill_job& job, event_watch& w, std::vector<drill_row>& rows,
                       drill_figures& f, std::string& job1);
// Task 2, after task 1 (`job1`) ended.
void rehearse_task_two(event_watch& w, const std::string& job1, std::vector<drill_row>& rows, drill_figures& f);

}  // namespace trainctl::commands
